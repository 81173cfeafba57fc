"""Decoding metadata logs at scale with PySpark: the data source, its planning and rows, the CLI and report.

Imports ``kraft.records`` and ``kraft.image``; pyspark and pyarrow only inside functions (optional extra).
"""
