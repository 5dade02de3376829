"""oxillama's kernel generator: renders templates/ into generated/ from the table in spec.py."""
