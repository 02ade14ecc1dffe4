"""The request bodies of the ``/auth`` routes: registration, login, token refresh and password change."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragline.server.accounts import MAX_PASSWORD_BYTES

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _password_field(value: str) -> str:
    if len(value.encode("utf-8")) > MAX_PASSWORD_BYTES:
        raise ValueError(f"must be at most {MAX_PASSWORD_BYTES} bytes")
    return value


class RegisterBody(BaseModel):
    """WeKnora's registration: a user name, an e-mail address and a password of at least 6 characters."""

    model_config = ConfigDict(extra="ignore")
    username: str = Field(min_length=2, max_length=50)
    email: str = Field(min_length=3, max_length=254)
    password: str = Field(min_length=6, max_length=1000)

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        if not _EMAIL.match(value.strip()):
            raise ValueError("must be an e-mail address")
        return value.strip().lower()

    _password = field_validator("password")(_password_field)


class LoginBody(BaseModel):
    """WeKnora's login."""

    model_config = ConfigDict(extra="ignore")
    email: str = Field(min_length=1, max_length=254)
    password: str = Field(min_length=1, max_length=1000)


class RefreshBody(BaseModel):
    """The refresh token (``refreshToken`` as the web app sends it, or ``refresh_token``)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    refresh_token: str = Field(alias="refreshToken", min_length=1, max_length=4000)


class ChangePasswordBody(BaseModel):
    """The current password and a new one."""

    model_config = ConfigDict(extra="ignore")
    old_password: str = Field(min_length=1, max_length=1000)
    new_password: str = Field(min_length=1, max_length=1000)
