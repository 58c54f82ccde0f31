from sparseety_tui.cli import main

main()
