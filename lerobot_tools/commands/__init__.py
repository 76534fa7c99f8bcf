"""Click commands, one module per command; each only parses options and calls the library."""
