"""The views of a run: terminal lines (``terminal``), Markdown (``markdown``) and the HTML page
(``html``), with what they share (``text``). They read typed reports; the HTML page reads a
stored run through ``data.runread``."""
