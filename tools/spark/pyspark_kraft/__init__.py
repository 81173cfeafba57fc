"""Spark's discovery hook for the ``kraft`` data source (installed as ``pyspark_kraft``).
May import kraft.tools.spark only (the data source it names).

PySpark 4 looks, once per session, for installed top-level modules named
``pyspark_*`` that define ``DefaultSource`` (a ``DataSource``), and registers
each under its name: with kraft installed, ``spark.read.format("kraft")``
works with no call first. This package is installed as ``pyspark_kraft``
(see ``pyproject.toml``) and is imported only by that lookup, which runs
where pyspark is. The discovered source has no filter pushdown (PySpark
refuses one unless ``spark.sql.python.filterPushdown.enabled`` is set);
``kraft.tools.spark.source.register(spark)`` turns both on.
"""

from kraft.tools.spark.source import KraftDataSource as DefaultSource

__all__ = ["DefaultSource"]
