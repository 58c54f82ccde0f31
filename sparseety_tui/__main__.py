from sparseety_tui.cli.main import main

main()
