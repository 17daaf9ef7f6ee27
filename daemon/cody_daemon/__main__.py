"""`python -m cody_daemon`: the same as `cody-daemon`."""

from .cli import main

main()
