"""Namespace hosts for perf/compare.py --hosts: every system's ranks spread over H "hosts" made
of network namespaces (tests/netns/hosts_lib.sh: host i at 198.18.1.<i+1> on eth0, links
optionally shaped with tc tbf), so that weft, Open MPI and Gloo cross the same veth links.

- weft and Gloo start their ranks through hosts_lib.sh's hosts_run_ranks (rank = host * per +
  local, rank 0 on host 0, its output returned).
- Open MPI's mpirun runs in host 0's namespace and reaches the other hosts through
  perf/netns/mpi_rsh_agent.sh (its "ssh"), every daemon with a hostname of its own, so that Open
  MPI sees separate nodes: its network path between them, shared memory inside each.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTS_LIB = os.path.join(HERE, "..", "tests", "netns", "hosts_lib.sh")
MPI_AGENT = os.path.join(HERE, "netns", "mpi_rsh_agent.sh")


def address(host):
    return f"198.18.1.{host + 1}"  # hosts_lib.sh's hosts_addr, NIC 0


class NamespaceHosts:
    """H namespace hosts, alive from __enter__ to __exit__. A shell holds them: it creates them
    with hosts_create and waits on its standard input; when that closes (here, or because this
    process died) the shell exits and its EXIT trap removes them."""

    def __init__(self, count, rate, pin):
        self.count = count
        self.rate = rate
        self.tag = f"cmp{os.getpid()}"
        self.env = dict(os.environ, HOSTS_TAG=self.tag, HOSTS_PIN="1" if pin else "0")
        self.holder = None

    def __enter__(self):
        script = f'. "{HOSTS_LIB}" && hosts_create {self.count} {self.rate} && echo ready && read _'
        self.holder = subprocess.Popen(["bash", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True, env=self.env)
        said = []
        for line in self.holder.stdout:
            if line.strip() == "ready":
                return self
            said.append(line)
        code = self.holder.wait()
        reason = "".join(said).strip() or f"hosts_create failed ({code})"
        if code == 77:  # hosts_lib.sh's "skipped: ..." (not root, no namespaces here)
            print(reason)
            sys.exit(77)
        sys.exit(f"compare.py: namespace hosts: {reason}")

    def __exit__(self, *exc):
        self.holder.stdin.close()
        self.holder.wait()

    def _lib(self, body, args, env=None, timeout=900):
        """Runs BODY in a shell that sourced hosts_lib.sh and knows these hosts."""
        script = f'. "{HOSTS_LIB}"; HOSTS_COUNT={self.count}; {body}'
        return subprocess.run(["bash", "-c", script, "hosts", *args], capture_output=True, text=True,
                              env=env or self.env, timeout=timeout)

    def run_ranks(self, per_host, cmd, extra_env):
        """Rank 0's output of CMD run as PER_HOST ranks on every host, EXTRA_ENV ({name: value},
        no spaces in values) added to each rank's environment; exits naming the failed ranks."""
        with tempfile.TemporaryDirectory(prefix="weft-compare-hosts.") as out:
            env = dict(self.env, HOSTS_ENV=" ".join(f"{k}={v}" for k, v in extra_env.items()))
            p = self._lib('hosts_run_ranks "$1" "$2" "${@:3}"; hosts_wait_ranks', [str(per_host), out, *cmd], env)
            logs = {name: open(os.path.join(out, name)).read() for name in sorted(os.listdir(out))}
            if p.returncode != 0:
                shown = "".join(f"--- {name}\n{text[-1500:]}" for name, text in logs.items())
                sys.exit(f"compare.py: {' '.join(cmd)} failed on {p.returncode} rank(s):\n{shown}{p.stderr[-1000:]}")
            return logs["rank0.log"]

    def mpirun(self, per_host, mpirun_args, timeout=900):
        """The output of mpirun MPIRUN_ARGS started in host 0 with PER_HOST slots on every host."""
        slots = ",".join(f"{address(i)}:{per_host}" for i in range(self.count))
        pinned = self.env["HOSTS_PIN"] == "1"
        pin = ["taskset", "-c", "0"] if pinned else []
        # Each daemon counts its host's slots, not the machine's cores the hosts share: where the
        # ranks outnumber those cores, tell Open MPI, as --oversubscribe on one host does (its
        # ranks then yield while they wait instead of spinning out their time slice).
        cores = 1 if pinned else os.cpu_count()
        crowded = per_host > cores or (not pinned and per_host * self.count > cores)
        yielding = ["--mca", "mpi_yield_when_idle", "1"] if crowded else []
        cmd = ["ip", "netns", "exec", f"weft-h0-{self.tag}", *pin, "unshare", "--uts", "sh", "-c",
               'hostname host0 && exec "$@"', "mpirun", "mpirun", "--allow-run-as-root", "--host", slots,
               "-np", str(per_host * self.count), "--bind-to", "none", "--mca", "plm_rsh_agent", MPI_AGENT,
               "--mca", "oob_tcp_if_include", "eth0", *yielding, *mpirun_args]
        p = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=timeout)
        if p.returncode != 0:
            sys.exit(f"compare.py: mpirun across hosts failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        return p.stdout

    def goodput(self):
        """iperf3's goodput between hosts 0 and 1 both ways at once (GB/s, the slower direction),
        or None without iperf3."""
        p = self._lib("hosts_goodput 0 1", [], timeout=60)
        if p.returncode == 77:
            return None
        if p.returncode != 0:
            sys.exit(f"compare.py: iperf3 between the hosts failed:\n{p.stdout}{p.stderr}")
        return float(p.stdout.strip())
