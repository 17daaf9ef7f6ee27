"""`python -m cody_client`: the same as `cody-client`."""

from .cli import main

main()
