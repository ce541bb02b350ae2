"""A real Kubernetes control plane on loopback for the real-engine run: etcd, kube-apiserver (admission on, the
default plugins: NamespaceLifecycle, ServiceAccount, PodSecurity, ResourceQuota, DefaultStorageClass, ...),
kube-controller-manager (Deployments, ReplicaSets, Jobs, DaemonSets, StatefulSets, the garbage collector and the
namespace controller that finalizes a deleted namespace), kube-scheduler, and KWOK, which plays the kubelets of
fake nodes: a scheduled pod becomes Running and Ready, a Job's pod Succeeded (no container ever runs, no image is
pulled).

What a fake cluster lacks, supplied here and said so (tests/e2e/kwok-stages.yaml, KWOK Stages of the project):
  - volume binding: a claim without a volume gets a hostPath PersistentVolume of its class, bound at once
    (a provisioner would);
  - load balancers: a LoadBalancer Service gets status.loadBalancer.ingress 127.0.0.1 (a cloud controller would);
  - node labels the GPU Operator's feature discovery would put (nvidia.com/gpu.present, product) are set on the
    fake GPU nodes when they are created, with their extended resources (nvidia.com/gpu, the RDMA device).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import yaml

HERE = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d: Path) -> None:
    """A CA, the apiserver's serving certificate for 127.0.0.1 and the in-cluster names, an admin client
    certificate (O=system:masters) and the service-account signing key."""
    d.mkdir(parents=True, exist_ok=True)
    if (d / "admin.crt").exists():
        return
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
             "-subj", "/CN=e2e-ca", cwd=d)
    (d / "san.cnf").write_text(
        "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n"
        "extendedKeyUsage=serverAuth\n")
    (d / "client.cnf").write_text("extendedKeyUsage=clientAuth\n")
    for name, subj, ext in (("apiserver", "/CN=kube-apiserver", "san.cnf"),
                            ("admin", "/O=system:masters/CN=e2e-admin", "client.cnf")):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", subj, cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.crt", "-days", "3650", "-extfile", ext, cwd=d)
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


def kubeconfig(pki: Path, server: str) -> str:
    import base64

    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
        "clusters": [{"name": "e2e", "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")}}],
        "users": [{"name": "admin", "user": {"client-certificate-data": b64("admin.crt"),
                                             "client-key-data": b64("admin.key")}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}]})


class ControlPlane:
    def __init__(self, bin_dir: Path, work: Path, kwok_stages: Path, pid_dir: Path | None = None):
        self.bin, self.work, self.upstream_stages = bin_dir, work, kwok_stages
        self.pid_dir = pid_dir or work.parent / "pids"
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.pki = work / "pki"
        self.kubeconfig_path = work / "admin.kubeconfig"
        self.logs = work / "logs"

    def _start(self, name: str, *args: str) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = open(self.logs / f"{name}.log", "wb")
        proc = subprocess.Popen([str(self.bin / name), *args], stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs.append((name, proc))
        self.pid_dir.mkdir(parents=True, exist_ok=True)  # reap() finds them after a kill
        (self.pid_dir / f"{name}.pid").write_text(f"{proc.pid} {self.bin / name}\n")

    @staticmethod
    def reap(pid_dir: Path) -> None:
        """Kill what a killed earlier run left running (its pid files name the pid and the binary, checked against
        /proc so an unrelated process that reused the pid is left alone)."""
        import signal as _signal
        for f in sorted(pid_dir.glob("*.pid")) if pid_dir.exists() else []:
            pid, binary = f.read_text().split(maxsplit=1)
            try:
                if os.readlink(f"/proc/{pid}/exe") == binary.strip():
                    os.kill(int(pid), _signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
                pass
            f.unlink()

    def start(self) -> None:
        make_pki(self.pki)
        p = self.pki
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        shutil.rmtree(self.work / "etcd", ignore_errors=True)
        self._start("etcd", "--data-dir", str(self.work / "etcd"), "--name", "e2e",
                    "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                    "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                    "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
                    "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
                    "--initial-cluster", f"e2e=http://127.0.0.1:{peer_port}",
                    "--unsafe-no-fsync", "--log-level", "warn")
        self.server = f"https://127.0.0.1:{api_port}"
        self._start("kube-apiserver", f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                    "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={api_port}",
                    f"--tls-cert-file={p / 'apiserver.crt'}", f"--tls-private-key-file={p / 'apiserver.key'}",
                    f"--client-ca-file={p / 'ca.crt'}", f"--service-account-key-file={p / 'sa.pub'}",
                    f"--service-account-signing-key-file={p / 'sa.key'}",
                    "--service-account-issuer=https://kubernetes.default.svc",
                    "--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=RBAC",
                    "--endpoint-reconciler-type=none", "--allow-privileged=true", "--v=1")
        self.kubeconfig_path.write_text(kubeconfig(p, self.server))
        self.wait_ready()
        kc = f"--kubeconfig={self.kubeconfig_path}"
        self._start("kube-controller-manager", kc, f"--authentication-kubeconfig={self.kubeconfig_path}",
                    f"--authorization-kubeconfig={self.kubeconfig_path}", "--leader-elect=false",
                    "--bind-address=127.0.0.1", f"--secure-port={free_port()}", f"--cert-dir={self.work / 'kcm'}",
                    f"--service-account-private-key-file={p / 'sa.key'}", f"--root-ca-file={p / 'ca.crt'}",
                    f"--cluster-signing-cert-file={p / 'ca.crt'}", f"--cluster-signing-key-file={p / 'ca.key'}",
                    "--use-service-account-credentials=false", "--controllers=*,-nodeipam,-cloud-node-lifecycle",
                    "--concurrent-gc-syncs=10", "--concurrent-namespace-syncs=10", "--v=1")
        self._start("kube-scheduler", kc, f"--authentication-kubeconfig={self.kubeconfig_path}",
                    f"--authorization-kubeconfig={self.kubeconfig_path}", "--leader-elect=false",
                    "--bind-address=127.0.0.1", f"--secure-port={free_port()}", "--v=1")
        stages = self.work / "kwok-config.yaml"
        stages.write_text(self.upstream_stages.read_text() + "\n---\n" + (HERE / "kwok-stages.yaml").read_text())
        self._start("kwok", kc, "--config", str(stages), "--manage-all-nodes=false",
                    "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--node-ip=127.0.0.1",
                    "--cidr=10.244.0.1/16", "--node-lease-duration-seconds=40",
                    f"--server-address=127.0.0.1:{free_port()}")
        self.wait_for(lambda: self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False)
                      .returncode == 0, 120, "the controller-manager's default ServiceAccount")

    def wait_ready(self, timeout: float = 120) -> None:
        self.wait_for(lambda: self.kubectl("get", "--raw", "/readyz", check=False).returncode == 0, timeout,
                      "kube-apiserver /readyz")

    def wait_for(self, ok, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.check_alive()
            if ok():
                return
            time.sleep(0.5)
        raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what} (logs: {self.logs})")

    def check_alive(self) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                tail = (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig_path)}

    def kubectl(self, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin / "kubectl"), f"--kubeconfig={self.kubeconfig_path}", *args],
                              input=stdin, text=True, capture_output=True, check=check)

    def apply(self, objects: list[dict]) -> None:
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                     stdin=yaml.safe_dump_all(objects))

    def get_json(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def stop(self) -> None:
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)
            (self.pid_dir / f"{name}.pid").unlink(missing_ok=True)
        self.procs.clear()


def node(name: str, labels: dict[str, str], capacity: dict[str, str], taints: list[dict]) -> dict:
    """A fake node KWOK manages (annotation kwok.x-k8s.io/node=fake); its status is set at once."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "type": "kwok", **labels}},
        "spec": {"taints": taints},
        "status": {"capacity": capacity, "allocatable": capacity,
                   "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                                "kubeletVersion": "fake", "containerRuntimeVersion": "fake"}},
    }
