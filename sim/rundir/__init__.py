"""The run directory: the only code that knows its file names, layout and formats."""
