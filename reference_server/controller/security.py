"""Secrets of the controller: password hashes (Argon2), bearer tokens (JWT, HS256) and API-key encryption (Fernet)."""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import jwt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.fernet import Fernet, InvalidToken

_passwords = PasswordHasher()


def hash_password(password: str) -> str:
    return _passwords.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _passwords.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


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


class TokenIssuer:
    algorithm = "HS256"

    def __init__(self, secrets_dir: Path, ttl_seconds: int) -> None:
        self._key = _secret_file(secrets_dir / "jwt_secret_key", lambda: secrets.token_hex(32).encode())
        self.ttl_seconds = ttl_seconds

    def issue(self, user_id: str) -> str:
        now = int(time.time())
        claims = {"sub": user_id, "iat": now, "exp": now + self.ttl_seconds, "jti": secrets.token_hex(8)}
        return jwt.encode(claims, self._key, algorithm=self.algorithm)

    def verify(self, token: str) -> TokenClaims | None:
        """The token's claims, or None when it is malformed, forged or expired."""
        try:
            claims = jwt.decode(token, self._key, algorithms=[self.algorithm], options={"require": ["sub", "exp"]})
        except jwt.PyJWTError:
            return None
        return TokenClaims(user_id=str(claims["sub"]), expires_at=int(claims["exp"]))


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
