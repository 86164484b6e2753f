"""Example aggregate types, loaded only when named in ``[projection] modules``."""
