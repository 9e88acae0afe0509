"""A guarded mpirun job's store (``backends.external.mpirun.rendezvous``) listens on the loopback
interface only when the job runs on one host: no other machine can reach it and write into
the job's ledger. Only a job that spans hosts opens it on every interface."""

import json
import textwrap

import pytest

from tests.mpirun_jobs import mpirun, needs_mpi
from trtsim.backends.external.mpirun import store_host

# Rank 0 lists the listening sockets on the store's port (/proc/net/tcp{,6}: little-endian
# hex words, state 0A is LISTEN) after every rank has reached the store through its address.
SCRIPT = textwrap.dedent("""
    import ipaddress, json
    from mpi4py import MPI
    from trtsim.backends.external.mpirun import rendezvous

    def listeners(port):
        found = []
        for table in ("tcp", "tcp6"):
            with open(f"/proc/net/{table}") as f:
                for line in f.readlines()[1:]:
                    local, state = line.split()[1], line.split()[3]
                    address, hex_port = local.rsplit(":", 1)
                    raw = bytes.fromhex(address)
                    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                    if int(hex_port, 16) == port and state == "0A":
                        found.append([table, str(ipaddress.ip_address(words))])
        return sorted(found)

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    store = rendezvous(world, rank, 60)
    store.set(f"rank{rank}", "here")
    world.Barrier()
    if rank == 0:
        print("LISTENERS", json.dumps(listeners(store.port)), flush=True)
        print("REACHED", sorted(store.get(f"rank{r}").decode() for r in range(2)), flush=True)
    world.Barrier()
""")


@needs_mpi
@pytest.mark.timeout(400)
def test_a_one_host_job_serves_its_store_on_loopback_only(tmp_path):
    script = tmp_path / "store.py"
    script.write_text(SCRIPT)
    job = mpirun([str(script)], timeout=300, ranks=2)
    assert job.returncode == 0, job.output[-3000:]
    lines = dict(line.split(" ", 1) for line in job.output.splitlines()
                 if line.startswith(("LISTENERS ", "REACHED ")))
    assert json.loads(lines["LISTENERS"]) == [["tcp", "127.0.0.1"]], job.output[-3000:]
    assert lines["REACHED"] == "['here', 'here']"


def test_the_store_opens_to_every_interface_only_when_the_job_spans_hosts():
    assert store_host(["node7", "node7", "node7"]) == "127.0.0.1"
    assert store_host(["node7"]) == "127.0.0.1"
    assert store_host(["node7", "node8", "node7"]) == "0.0.0.0"
