"""Gangs: M members placed together in one network domain, chosen and claimed all or
nothing (``service`` is the door; ``network`` the levels; ``search`` the best gang)."""
