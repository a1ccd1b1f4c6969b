"""A bounded fuzz tier: generated custom resources, admission bodies and watch lines (hypothesis)."""
