"""`python -m xla2tpu ...`: run the binary this package installed, with the same arguments."""

import os
import sys

from xla2tpu import find_xla2tpu_bin


def main() -> None:
    binary = find_xla2tpu_bin()
    if sys.platform == "win32":
        import subprocess

        sys.exit(subprocess.run([binary, *sys.argv[1:]]).returncode)
    # Replace this process, so signals and the exit status are the binary's own.
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
