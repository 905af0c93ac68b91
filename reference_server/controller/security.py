"""Secrets of the controller: password hashes (Argon2), bearer tokens (JWT, HS256), API-key encryption (Fernet)
and the throttling of failed logins."""

from __future__ import annotations

import functools
import hashlib
import math
import os
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jwt
from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.fernet import Fernet, InvalidToken

# argon2-cffi's parameter sets, by name (Settings.password_hash_profile). RFC_9106_LOW_MEMORY is argon2-cffi's own
# default (64 MiB, 3 passes, 4 lanes: about 0.15 s of CPU per hash); CHEAPEST is for test suites only, which log in
# thousands of users: never for a server people log into.
PASSWORD_HASH_PROFILES = ("RFC_9106_LOW_MEMORY", "RFC_9106_HIGH_MEMORY", "CHEAPEST")
DEFAULT_PASSWORD_HASH_PROFILE = "RFC_9106_LOW_MEMORY"


@functools.cache
def _hasher(profile: str) -> PasswordHasher:
    return PasswordHasher.from_parameters(getattr(profiles, profile))


def hash_password(password: str, profile: str = DEFAULT_PASSWORD_HASH_PROFILE) -> str:
    return _hasher(profile).hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """Against the parameters written in the hash itself, whatever the profile that made it."""
    try:
        return _hasher(DEFAULT_PASSWORD_HASH_PROFILE).verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str, profile: str) -> bool:
    """Whether a hash was made with other parameters than `profile`'s (a server started with another profile)."""
    try:
        return _hasher(profile).check_needs_rehash(password_hash)
    except InvalidHashError:
        return False


@functools.cache
def decoy_hash(profile: str = DEFAULT_PASSWORD_HASH_PROFILE) -> str:
    """A hash of a random password, made once with the same parameters as the users' own: a login for an unknown
    or inactive user verifies against it, so that its answer takes as long as a wrong password for a real user."""
    return hash_password(secrets.token_hex(16), profile)


class LoginThrottle:
    """Failed logins per username within a sliding window; `max_failures` of them make further attempts for that
    username wait, whether the user exists or not, so that the refusal says nothing about it.

    Kept in memory (a restart forgets them; an attacker cannot cause one). An attempt counts as a failure from its
    start (`begin`) until it succeeds (`succeeded`), so that concurrent attempts cannot all slip in before the first
    of them has failed.

    Bounded whatever the requests (issue 34): a name is kept as a 16-byte digest, never as sent (a login body may
    be megabytes), the entries in the order of their last failure so that those out of the window leave from the
    front, one at a time, and at most `max_entries` of them (the least recently failing go first: a flood of
    distinct names costs memory once, not per name)."""

    def __init__(
        self,
        max_failures: int,
        window_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = 100_000,
    ) -> None:
        self.max_failures, self.window, self._clock, self.max_entries = max_failures, window_seconds, clock, max_entries
        self._failures: OrderedDict[bytes, deque[float]] = OrderedDict()

    @staticmethod
    def _key(username: str) -> bytes:
        return hashlib.blake2b(username.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def begin(self, username: str) -> int:
        """0 when the attempt may go on (and counts as failed until it succeeds), else the whole seconds to wait."""
        now = self._clock()
        while self._failures:  # whole entries out of the window, oldest first
            oldest = next(iter(self._failures.values()))
            if oldest and oldest[-1] > now - self.window:
                break
            self._failures.popitem(last=False)
        key = self._key(username)
        times = self._failures.get(key)
        if times is None:
            while len(self._failures) >= self.max_entries:
                self._failures.popitem(last=False)
            times = self._failures[key] = deque(maxlen=self.max_failures)
        while times and times[0] <= now - self.window:
            times.popleft()
        if len(times) >= self.max_failures:
            return max(1, math.ceil(times[0] + self.window - now))
        times.append(now)
        self._failures.move_to_end(key)
        return 0

    def succeeded(self, username: str) -> None:
        self._failures.pop(self._key(username), None)

    def __len__(self) -> int:
        return len(self._failures)


def _secret_file(path: Path, make: callable) -> bytes:
    """Read a secret, creating it (mode 0600) on first use, as GNS3 does in its secrets directory."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(make())
    return path.read_bytes().strip()


@dataclass(frozen=True)
class TokenClaims:
    user_id: str
    expires_at: int
    token_id: str  # `jti`: what a logout revokes
    version: int  # `ver`, as in gns3-server: the user's token version when it was issued (a password change bumps it)


class TokenIssuer:
    algorithm = "HS256"

    def __init__(self, secrets_dir: Path, ttl_seconds: int) -> None:
        self._key = _secret_file(secrets_dir / "jwt_secret_key", lambda: secrets.token_hex(32).encode())
        self.ttl_seconds = ttl_seconds

    def issue(self, user_id: str, version: int) -> str:
        now = int(time.time())
        claims = {
            "sub": user_id,
            "iat": now,
            "exp": now + self.ttl_seconds,
            "jti": secrets.token_hex(16),
            "ver": version,
        }
        return jwt.encode(claims, self._key, algorithm=self.algorithm)

    def verify(self, token: str) -> TokenClaims | None:
        """The token's claims, or None when it is malformed, forged or expired."""
        try:
            claims = jwt.decode(token, self._key, algorithms=[self.algorithm], options={"require": ["sub", "exp"]})
            # Every token issued here has a jti; one signed otherwise with this key is known by its digest.
            token_id = str(claims.get("jti") or hashlib.sha256(token.encode()).hexdigest())
            return TokenClaims(str(claims["sub"]), int(claims["exp"]), token_id, int(claims.get("ver", 0)))
        except (jwt.PyJWTError, TypeError, ValueError):  # TypeError, ValueError: a signed `ver` that is no number
            return None


class SecretBox:
    """Encrypts LLM API keys at rest; the clear key exists only in memory, for one request."""

    def __init__(self, secrets_dir: Path) -> None:
        self._fernet = Fernet(_secret_file(secrets_dir / "encryption_key", Fernet.generate_key))

    def seal(self, clear: str) -> str:
        return self._fernet.encrypt(clear.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken as exc:  # a different secrets directory, or a tampered row
            raise ValueError("an API key cannot be decrypted with this server's encryption key") from exc
