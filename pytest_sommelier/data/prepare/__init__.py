"""Data preparation: formatting prepared examples, the importers, BFCL."""
