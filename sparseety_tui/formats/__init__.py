"""Format families: detect a file's format and parse each line into a kind and an event
(``sparseety_tui.events``). One module (or package) per family, registered in
``registry.FAMILIES``."""
