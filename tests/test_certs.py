"""The conversion webhook's certificates: what the keeper holding each state makes of it
(mxjob.certs.authority), that what is made is a chain the API server and Python's ssl accept, and
what a pass of the keeper writes where (mxjob.certs.controller, against tests/keeper_api.py)."""

import base64
import datetime
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509 import DNSName
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from mxjob.certs.authority import (
    CA_CERT,
    CA_KEY,
    CA_LIFETIME,
    CA_RENEW_BEFORE,
    SERVING_LIFETIME,
    SERVING_RENEW_BEFORE,
    TLS_CERT,
    TLS_KEY,
    plan,
)
from mxjob.certs.controller import MissingSecretError
from tests import keeper_api
from tests.keeper_api import NAMESPACE, TARGET

NAMES = ("mxjob-convert.mxjob-system.svc", "mxjob-convert.mxjob-system.svc.cluster.local")
NOW = datetime.datetime(2026, 11, 25, 12, 0, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)


def fresh() -> dict[str, bytes]:
    made = plan(None, NAMES, NOW).data
    assert made is not None
    return made


def cas(data: dict[str, bytes]) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(data[CA_CERT])


def serving(data: dict[str, bytes]) -> x509.Certificate:
    return x509.load_pem_x509_certificate(data[TLS_CERT])


def test_a_new_secret_is_a_ca_and_a_serving_certificate_it_signs() -> None:
    data = fresh()
    assert set(data) == {CA_CERT, CA_KEY, TLS_CERT, TLS_KEY}
    (ca,) = cas(data)
    cert = serving(data)
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == list(NAMES)
    assert cert.not_valid_after_utc == NOW + SERVING_LIFETIME
    assert ca.not_valid_after_utc == NOW + CA_LIFETIME
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


def test_python_ssl_loads_the_pair_and_a_strict_client_verifies_the_chain(tmp_path: Path) -> None:
    """What gunicorn loads (tls.crt, tls.key) and what the API server trusts (ca.crt) fit: the
    chain passes a web-PKI server verification (names, CA constraints, key usages)."""
    data = fresh()
    for key in (TLS_CERT, TLS_KEY):
        (tmp_path / key).write_bytes(data[key])
    ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
        tmp_path / TLS_CERT, tmp_path / TLS_KEY
    )
    for name in NAMES:
        verifier = (
            PolicyBuilder()
            .store(Store(cas(data)))
            .time(NOW + DAY)
            .build_server_verifier(DNSName(name))
        )
        chain = verifier.verify(serving(data), [])
        assert chain[-1] == cas(data)[0]
    wrong = (
        PolicyBuilder()
        .store(Store(cas(data)))
        .time(NOW)
        .build_server_verifier(DNSName("mxjob-hook.mxjob-system.svc"))
    )
    with pytest.raises(VerificationError):
        wrong.verify(serving(data), [])


@pytest.mark.parametrize(
    ("later", "expect"),
    [
        (datetime.timedelta(0), None),
        (SERVING_LIFETIME - SERVING_RENEW_BEFORE - DAY, None),
        (SERVING_LIFETIME - SERVING_RENEW_BEFORE, "the serving certificate is due: a new one"),
    ],
    ids=["same-moment", "a-day-before-due", "due"],
)
def test_a_valid_secret_is_kept_until_its_serving_certificate_is_due(
    later: datetime.timedelta, expect: str | None
) -> None:
    data = fresh()
    decided = plan(data, NAMES, NOW + later)
    if expect is None:
        assert decided.data is None
        assert decided.reason == "valid"
        return
    assert decided.reason == expect
    assert decided.data is not None
    # The same CA, so the CRD's caBundle stays as it is.
    assert decided.data[CA_CERT] == data[CA_CERT]
    assert decided.data[CA_KEY] == data[CA_KEY]
    assert serving(decided.data).not_valid_after_utc == NOW + later + SERVING_LIFETIME


def test_a_due_ca_is_replaced_and_the_old_one_stays_trusted_until_it_expires() -> None:
    data = fresh()
    at = NOW + CA_LIFETIME - CA_RENEW_BEFORE
    decided = plan(data, NAMES, at)
    assert decided.reason == "the CA is due: a new one"
    assert decided.data is not None
    new, old = cas(decided.data)
    assert old == cas(data)[0]
    serving(decided.data).verify_directly_issued_by(new)
    # Later serving renewals keep the old CA in the bundle while it is valid, then drop it.
    again = plan(decided.data, NAMES, at + SERVING_LIFETIME - SERVING_RENEW_BEFORE)
    assert again.data is not None
    assert cas(again.data) == [new, old]
    past = plan(decided.data, NAMES, NOW + CA_LIFETIME + DAY)
    assert past.data is not None
    assert cas(past.data) == [new]


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (lambda d, o: {**d, TLS_CERT: b"not a certificate"}, "no readable serving certificate"),
        (lambda d, o: {k: v for k, v in d.items() if k != TLS_KEY}, "no readable serving cert"),
        (lambda d, o: {**d, TLS_KEY: o[TLS_KEY]}, "the serving key does not match"),
        (
            lambda d, o: {**d, TLS_CERT: o[TLS_CERT], TLS_KEY: o[TLS_KEY]},
            "the serving certificate is not the CA's",
        ),
    ],
    ids=["garbage-cert", "no-key", "other-key", "other-ca"],
)
def test_a_broken_serving_pair_is_made_again_under_the_same_ca(spoil, reason) -> None:  # type: ignore[no-untyped-def]
    data, other = fresh(), fresh()
    decided = plan(spoil(data, other), NAMES, NOW)
    assert decided.reason.startswith(reason), decided.reason
    assert decided.data is not None
    assert decided.data[CA_CERT] == data[CA_CERT]
    serving(decided.data).verify_directly_issued_by(cas(data)[0])


def test_other_names_get_a_new_serving_certificate() -> None:
    data = fresh()
    decided = plan(data, ("localhost",), NOW)
    assert decided.reason == "the serving certificate is not for localhost: a new one"
    assert decided.data is not None
    names = serving(decided.data).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert names.value.get_values_for_type(x509.DNSName) == ["localhost"]


@pytest.mark.parametrize(
    "data",
    [
        {},
        {CA_CERT: b"junk", CA_KEY: b"junk"},
        {CA_CERT: b"", TLS_CERT: b"", TLS_KEY: b""},
    ],
    ids=["empty", "junk", "no-ca-key"],
)
def test_a_secret_without_a_readable_ca_starts_over(data: dict[str, bytes]) -> None:
    decided = plan(data, NAMES, NOW)
    assert decided.reason == "no readable CA yet: a new one"
    assert decided.data is not None
    assert len(cas(decided.data)) == 1


def test_a_ca_whose_key_is_another_starts_over() -> None:
    data, other = fresh(), fresh()
    decided = plan({**data, CA_KEY: other[CA_KEY]}, NAMES, NOW)
    assert decided.reason == "no readable CA yet: a new one"


def test_a_ca_not_valid_yet_is_made_again() -> None:
    """A Secret made by a clock ahead of this one (or before the clock jumped back): its CA
    verifies nothing yet. Once kept as valid."""
    data = plan(None, NAMES, NOW + DAY).data
    assert data is not None
    decided = plan(data, NAMES, NOW)
    assert decided.reason == "the CA is not valid yet: a new one"
    assert decided.data is not None
    (ca,) = cas(decided.data)  # the future CA is no use in the bundle either
    assert ca.not_valid_before_utc <= NOW < ca.not_valid_after_utc
    serving(decided.data).verify_directly_issued_by(ca)


def test_a_serving_certificate_not_valid_yet_is_made_again_under_the_same_ca() -> None:
    data = fresh()
    ahead = plan({**data, TLS_CERT: b"", TLS_KEY: b""}, NAMES, NOW + DAY).data
    assert ahead is not None
    decided = plan(ahead, NAMES, NOW)
    assert decided.reason == "the serving certificate is not valid yet: a new one"
    assert decided.data is not None
    assert decided.data[CA_CERT] == data[CA_CERT]
    assert serving(decided.data).not_valid_before_utc <= NOW


# --- the keeper's pass (mxjob.certs.controller), against the API in memory
# --------------------------


def test_a_fresh_install_fills_the_two_shipped_secrets_and_the_bundle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CA and its key in the keeper's own Secret, the serving pair alone in the one the
    webhook's pods mount (once both were one Secret, the CA key beside the pair), each written
    by a patch of its data (once replaced whole, dropping the labels of whoever applied it)."""
    api = keeper_api.fresh_install()
    assert keeper_api.run(api, monkeypatch) == [
        f"secret {NAMESPACE}/{TARGET.ca_secret}: no readable CA yet: a new one",
        f"secret {NAMESPACE}/{TARGET.serving_secret}: no readable CA yet: a new one",
        f"crd {keeper_api.CRD}: caBundle set",
    ]
    ca, served = api.data(TARGET.ca_secret), api.data(TARGET.serving_secret)
    assert set(ca) == {CA_CERT, CA_KEY}
    assert set(served) == {TLS_CERT, TLS_KEY}
    serving(served).verify_directly_issued_by(cas(ca)[0])
    assert api.bundle == base64.b64encode(ca[CA_CERT]).decode()
    for name in (TARGET.ca_secret, TARGET.serving_secret):
        assert api.secrets[name]["metadata"]["labels"] == keeper_api.HELM_LABELS
        assert api.secrets[name]["type"] == "Opaque"
    writes = [call for call in api.calls if call[0] != "get"]
    assert keeper_api.run(api, monkeypatch) == []
    assert [call for call in api.calls if call[0] != "get"] == writes


def test_an_upgraded_install_keeps_its_ca_and_serving_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """An install of before the split kept the CA and the serving pair in one Secret, which
    the CRD trusts and the pods still mount: the keeper takes both from it, so the bundle stays
    and every pod keeps converting while the Deployment rolls onto the new Secret."""
    api = keeper_api.upgraded_install()
    single = api.data(TARGET.legacy_secret)
    bundle = api.bundle
    taken = "taken from mxjob-convert-tls (the single Secret of an earlier install)"
    assert keeper_api.run(api, monkeypatch) == [
        f"secret {NAMESPACE}/{TARGET.ca_secret}: {taken}",
        f"secret {NAMESPACE}/{TARGET.serving_secret}: {taken}",
    ]
    assert api.bundle == bundle
    assert api.data(TARGET.ca_secret) == {k: single[k] for k in (CA_CERT, CA_KEY)}
    assert api.data(TARGET.serving_secret) == {k: single[k] for k in (TLS_CERT, TLS_KEY)}
    assert keeper_api.run(api, monkeypatch) == []
    assert api.calls.count(("get", "secrets", TARGET.legacy_secret)) == 1


def test_a_missing_secret_is_an_error_and_none_is_created(monkeypatch: pytest.MonkeyPatch) -> None:
    """The keeper creates no Secret: one that may could create a service-account token Secret,
    which the token controller fills with another component's token."""
    api = keeper_api.fresh_install()
    del api.secrets[TARGET.serving_secret]
    with pytest.raises(MissingSecretError, match="mxjob-convert-serving is missing"):
        keeper_api.run(api, monkeypatch)
    assert {verb for verb, _, _ in api.calls} == {"get"}
