"""The conversion webhook's certificates (certs.authority): what a Secret holding each state
becomes, and that what is made is a chain the API server and Python's ssl accept."""

import datetime
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509 import DNSName
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from certs.authority import (
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
