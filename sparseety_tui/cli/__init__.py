"""The command line: argument parsing and one module per subcommand (no Textual unless the
subcommand is the UI)."""
