from .program import run

run()
