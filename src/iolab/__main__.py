from iolab.cli.main import run

run()
