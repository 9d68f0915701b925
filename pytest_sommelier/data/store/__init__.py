"""The run store and its history: writing, reading and comparing stored runs."""
