"""The views of a run: terminal lines (``terminal``), Markdown (``markdown``, ``compare``,
``ci_summary``), the HTML page (``html``) and the history page (``history_page``), with what they
share (``text``). Above ``data`` and ``core``, beside ``inference``: a view renders text from
values, and the store writes the text it is given."""
