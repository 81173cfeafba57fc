"""The ``kraft`` command line's commands, one module each (Kafka's ``kafka-*.sh`` tools), plus bench/ and spark/.
May import anything of kraft; heavy modules (trio, the node, pyspark, prometheus_client) only inside the commands.

A tool is what a command does at the command line: options, output, exit
codes. What it runs lives below it, in :mod:`kraft.programs` (embedding a
node) or :mod:`kraft.admin_client` (requests to a running quorum).
"""
