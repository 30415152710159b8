"""fpforge's command line (cli.py): the one entry point over rtl/, golden/, sim/ and synth/."""
