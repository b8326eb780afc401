"""SQL statements on Delta tables: parsed (pure), then run by the engine as Delta commits."""
