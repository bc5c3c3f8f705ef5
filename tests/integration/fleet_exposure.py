"""The fleet's security scenario, run inside a network namespace of its own (``unshare -n``)
with three addresses on loopback: 10.99.0.2 (the head), 10.99.0.3 (host db1) and 10.88.0.9
(a machine outside the fleet). ``nobody`` (uid 65534) plays another user of the machine.

``python fleet_exposure.py WORKDIR``:

1. nobody squats every directory iolab's Ray used or uses in WORKDIR/squat (mode 1777, like
   /tmp), with a ``ray_current_cluster`` naming a listener of theirs; root's
   ``iolab fleet status`` / ``fleet start`` / ``run --fleet auto`` must refuse and never
   connect there; then the same with a symbolic link;
2. a fleet (a head, host db1) under WORKDIR/base, the head started with
   ``--node-ip-address 127.0.0.1`` (Ray replaces it by 10.99.0.2, the address of the route
   out): its directory's mode and owner, what nobody can do there, what listens where and the
   warnings (the address replaced, the ports on every interface);
3. the firewall rules of docs/fleet.md applied: the fleet's ports closed to 10.88.0.9, open to
   the fleet's addresses, the fleet still working;
4. ``iolab fleet stop``.

What each step said goes to WORKDIR/exposure.json for the tests to check.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fleet_scenario import end_left, fleet_processes, iolab  # type: ignore[import-not-found]

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
HEAD, HOST, OUTSIDE = "10.99.0.2", "10.99.0.3", "10.88.0.9"
TRAP = 7777  # nobody's listener, where a squatted ray_current_cluster points
DOCS = Path(__file__).parents[2] / "docs" / "fleet.md"

# the listener runs as nobody, who may not enter the clone (under a mode-700 directory, as in
# CI) where this interpreter lives: Debian's own python3 where there is one
ANY_USERS_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
LISTENER = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(16)
while True:
    c, peer = s.accept()
    with open(sys.argv[3], "a") as f:
        f.write(f"{peer}\\n")
    c.close()
"""


def sh(*args: str) -> dict[str, Any]:
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def connects(source: str, dest: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in dest else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        s.bind((source, 0))
        try:
            s.connect((dest, port))
        except OSError:
            return False
        return True


def firewall_rules() -> list[str]:
    """The nft commands docs/fleet.md gives, for the test's subnet and the head's port."""
    text = DOCS.read_text()
    rules = [ln.strip() for ln in text.splitlines() if ln.startswith("    nft ")]
    assert rules, "docs/fleet.md gives no nft rule"
    return [r.replace("10.0.0.0/24", "10.99.0.0/24") for r in rules]


def squatted(work: Path, said: dict[str, Any]) -> None:
    squat = work / "squat"
    squat.mkdir(mode=0o1777)
    squat.chmod(0o1777)
    heard = squat / "heard"
    trap = subprocess.Popen(
        [*NOBODY, ANY_USERS_PYTHON, "-c", LISTENER, HEAD, str(TRAP), str(heard)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        lie = f"{HEAD}:{TRAP}"
        # every directory iolab's Ray has used (iolab-ray), uses (iolab-ray-UID/ray) and Ray's
        # own (ray), each with an address file naming the trap
        for d in ("iolab-ray", f"iolab-ray-{os.geteuid()}/ray", "ray"):
            made = sh(*NOBODY, "sh", "-c", f"umask 0; mkdir -p {squat / d} && "
                      f"echo {lie} > {squat / d / 'ray_current_cluster'}")  # fmt: skip
            assert made["rc"] == 0, made
        env = {"RAY_TMPDIR": str(squat)}
        said["status squatted"] = iolab("fleet", "status", env=env)
        said["run squatted"] = iolab(
            "run", str(work / "one.toml"), "--fleet", "auto", env=env, results=work / "sq.db"
        )
        said["start squatted"] = iolab(
            "fleet", "start", "--node-ip-address", HEAD, "--port", "6379", env=env
        )
        # the private directory replaced by a symbolic link to nobody's directory
        private = squat / f"iolab-ray-{os.geteuid()}"
        sh(*NOBODY, "sh", "-c", f"mv {private} {squat / 'moved'} && "
           f"ln -s {squat / 'moved'} {private}")  # fmt: skip
        said["status symlink"] = iolab("fleet", "status", env=env)
        said["stop symlink"] = iolab("fleet", "stop", env=env)
        time.sleep(0.5)
        said["heard"] = heard.read_text() if heard.exists() else ""
        said["ray after squat"] = fleet_processes(squat)
    finally:
        trap.kill()
        trap.wait()
        end_left(squat)


def fleet(work: Path, said: dict[str, Any]) -> None:
    base = work / "base"
    base.mkdir()
    base.chmod(0o1777)
    env = {"RAY_TMPDIR": str(base)}
    try:
        # 127.0.0.1 asked for: Ray takes the machine's address instead (it has a route out)
        said["start"] = iolab("fleet", "start", "--node-ip-address", "127.0.0.1", env=env)
        said["join"] = iolab(
            "fleet", "join", f"{HEAD}:6379", "--name", "db1", "--node-ip-address", HOST, env=env
        )
        said["status"] = iolab("fleet", "status", "--json", env=env)  # starts workers
        private = base / f"iolab-ray-{os.geteuid()}"
        st = private.lstat()
        said["dir"] = {"mode": oct(st.st_mode & 0o7777), "uid": st.st_uid}
        said["nobody ls"] = sh(*NOBODY, "ls", str(private / "ray"))
        said["nobody write"] = sh(
            *NOBODY, "sh", "-c", f"echo {HEAD}:{TRAP} > {private / 'ray' / 'ray_current_cluster'}"
        )
        said["listening"] = sh("ss", "-Hltnp")["stdout"]
        # each listening port at the addresses it answers on: the node's, or both nodes'
        targets = []
        for line in said["listening"].splitlines():
            address, port = line.split()[3].rsplit(":", 1)
            address = address.strip("[]")
            if int(port) != TRAP:
                wild = address in ("*", "0.0.0.0", "::")
                targets += [(a, int(port)) for a in ((HEAD, HOST) if wild else (address,))]
        said["targets"] = targets

        def reached(source: str) -> list[list[Any]]:
            return [[a, p, connects(source, a, p)] for a, p in targets]

        said["outside before"] = reached(OUTSIDE)
        said["nft"] = []
        for rule in firewall_rules():
            said["nft"].append({"rule": rule, **sh("sh", "-c", rule)})
        said["outside after"] = reached(OUTSIDE)
        said["head after"] = reached(HEAD)
        said["host after"] = reached(HOST)
        said["status with firewall"] = iolab("fleet", "status", "--json", env=env)
    finally:
        started = time.monotonic()
        said["stop"] = iolab("fleet", "stop", env=env)
        said["stop seconds"] = time.monotonic() - started
        said["left"] = fleet_processes(base)
        end_left(base)


def main(work: Path) -> None:
    said: dict[str, Any] = {}
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    token = work / "token"  # the fleet's token, as `iolab fleet start` makes it
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    for address in (HEAD, HOST, OUTSIDE):
        subprocess.run(["ip", "addr", "add", f"{address}/32", "dev", "lo"], check=True)
    # a route out, from the head's address: the machine's address, as Ray finds it
    subprocess.run(["ip", "route", "add", "default", "dev", "lo", "src", HEAD], check=True)
    try:
        squatted(work, said)
        fleet(work, said)
    finally:
        (work / "exposure.json").write_text(json.dumps(said, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
