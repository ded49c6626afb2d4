"""One module per CLI sub-command: ``add_arguments(parser)`` and ``main(args) -> int``."""
