"""``kraft bench``: one module per hot path, each printing our figure beside its peer's from the same run.

May import anything below ``kraft.tools``; heavy peers (kio, kafka-python, pyspark) inside the command.
"""
