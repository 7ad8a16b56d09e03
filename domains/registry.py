"""The domain registry: domains register by decorator; duplicates are rejected."""

from __future__ import annotations

from collections.abc import Callable

from domains.base import Domain, DomainError

_REGISTRY: dict[str, Domain] = {}


def register(factory: Callable[[], Domain]) -> Callable[[], Domain]:
    """Decorator for a zero-argument function returning a :class:`Domain`."""
    domain = factory()
    domain.validate()
    if domain.name in _REGISTRY:
        raise DomainError(f"domain {domain.name!r} is already registered")
    _REGISTRY[domain.name] = domain
    return factory


def get_domain(name: str) -> Domain:
    """Return a registered domain or raise naming the known ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise DomainError(f"unknown domain {name!r}; known domains: {known}") from None


def domain_names() -> list[str]:
    """Registered domain names, sorted."""
    return sorted(_REGISTRY)
