"""`python -m cody_client`: the same as `cody-client`."""

from .launch import main

main()
