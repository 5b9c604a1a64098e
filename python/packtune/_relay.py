"""The ``exec:CMD`` that ``packtune.simulate`` gives ``packtune simulate``: it passes each request
line to the Python process that holds the objective, through a Unix socket, and its answer
back. Run as a script (no package import), so it needs no PYTHONPATH.
"""

import socket
import sys


def main() -> int:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(sys.argv[1])
    answers = connection.makefile("r", encoding="utf-8")
    for line in sys.stdin:
        connection.sendall(line.encode("utf-8"))
        answer = answers.readline()
        if not answer:
            # The objective raised; Python raises it again once packtune has stopped.
            print("packtune.simulate: the Python objective failed", file=sys.stderr)
            return 1
        sys.stdout.write(answer)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
