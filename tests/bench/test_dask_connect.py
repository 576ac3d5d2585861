"""bench.dask_connect: a scheduler a user started with TLS, reached with a Security passed through
or with the Dask configuration's certificates (a real in-process TLS cluster); the spawn-time
environment of local:N workers. (local:N against another user: tests/security/test_security_cluster.py.)"""
from __future__ import annotations

import os

import pytest

from conftest import need_module

distributed = need_module("distributed")  # the cluster extra (setup.sh --dev)

from hipexplore.bench import dask_connect  # noqa: E402
from hipexplore.bench.dask_connect import connect  # noqa: E402
from hipexplore.errors import ConfigError  # noqa: E402


@pytest.fixture(scope="module")
def tls_cluster():
    """A scheduler and one (in-process) worker that speak TLS only, under certificates of their own."""
    need_module("cryptography")
    security = distributed.Security.temporary()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://",
                                  host="127.0.0.1", security=security, dashboard_address=None) as cluster:
        yield cluster.scheduler_address, security


def test_a_security_given_is_passed_through(tls_cluster):
    address, security = tls_cluster
    assert address.startswith("tls://")
    conn = connect(address, pin=False, security=security, timeout_s=20)
    try:
        assert conn.client.submit(pow, 2, 5, pure=False).result(timeout=30) == 32
    finally:
        conn.close()


def test_the_dask_configurations_certificates_are_used(tls_cluster, tmp_path):
    """What the CLI's --cluster tls://... relies on: the client's certificates from the Dask
    configuration (as ``DASK_DISTRIBUTED__COMM__TLS__*`` would set them)."""
    import dask

    address, security = tls_cluster
    (tmp_path / "ca.pem").write_text(security.tls_ca_file)
    (tmp_path / "client.pem").write_text(security.tls_client_cert)
    (tmp_path / "client.key").write_text(security.tls_client_key)
    with dask.config.set({"distributed.comm.tls.ca-file": str(tmp_path / "ca.pem"),
                          "distributed.comm.tls.client.cert": str(tmp_path / "client.pem"),
                          "distributed.comm.tls.client.key": str(tmp_path / "client.key"),
                          "distributed.comm.require-encryption": True}):
        conn = connect(address, pin=False, timeout_s=20)
        try:
            assert conn.client.submit(pow, 3, 3, pure=False).result(timeout=30) == 27
        finally:
            conn.close()


def assert_no_client_left_open() -> None:
    """A refused client is closed at once, not by the garbage collector at some later moment: its
    ``__del__`` closing it while the next client starts (holding its loop runner's lock) hung this
    module (a client refused for want of certificates stayed 'connecting')."""
    import gc

    left = [c for c in gc.get_objects() if isinstance(c, distributed.Client) and c.status != "closed"]
    assert left == [], [c.status for c in left]


def test_a_tls_address_without_certificates_is_one_line(tls_cluster):
    address, _ = tls_cluster
    with pytest.raises(ConfigError, match="speaks TLS and no client certificate is configured") as err:
        connect(address, pin=False, timeout_s=5)
    assert address in str(err.value) and "\n" not in str(err.value)
    assert_no_client_left_open()


def test_a_certificate_of_another_ca_is_refused(tls_cluster):
    address, _ = tls_cluster
    with pytest.raises(Exception) as err:  # noqa: PT011 - distributed's own error: the handshake fails
        connect(address, pin=False, security=distributed.Security.temporary(), timeout_s=5)
    assert not isinstance(err.value, AssertionError)
    assert_no_client_left_open()


def test_safe_path_is_set_only_while_workers_spawn(monkeypatch):
    """Nannies start concurrently: the variable stays set until the last spawn in progress ends,
    then the value from before (none, or the user's own) is back."""
    var = dask_connect.SAFE_PATH_VAR
    for before in (None, "x"):
        if before is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, before)
        with dask_connect.safe_path_environ():
            assert os.environ[var] == "1"
            with dask_connect.safe_path_environ():
                assert os.environ[var] == "1"
            assert os.environ[var] == "1"  # the first spawn still runs
        assert os.environ.get(var) == before
