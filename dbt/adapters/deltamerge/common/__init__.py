"""Pure helpers every layer uses (SQL text, config values); they import nothing of the package."""
