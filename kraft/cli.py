"""The `kraft` command line."""

from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="kraft")
def main() -> None:
    """kraft: a Kafka-wire-compatible KRaft node, codecs and metadata-log tools."""


from kraft.tools.dump_log import dump_log_command  # noqa: E402

main.add_command(dump_log_command)

from kraft.tools.storage import storage_group  # noqa: E402

main.add_command(storage_group)

from kraft.tools.bench import bench_group  # noqa: E402

main.add_command(bench_group)

from kraft.tools.codec import codec_group  # noqa: E402

main.add_command(codec_group)

from kraft.tools.bench_codec import codec_bench_command  # noqa: E402

bench_group.add_command(codec_bench_command)

from kraft.tools.bench_quorum import quorum_bench_command  # noqa: E402

bench_group.add_command(quorum_bench_command)

from kraft.tools.node import node_group  # noqa: E402

main.add_command(node_group)

from kraft.tools.node_status import status_command  # noqa: E402

node_group.add_command(status_command)

from kraft.tools.quickstart import quickstart_command  # noqa: E402

main.add_command(quickstart_command)

from kraft.tools.quorum import quorum_group  # noqa: E402

main.add_command(quorum_group)

from kraft.tools.features import features_group  # noqa: E402

main.add_command(features_group)

from kraft.tools.observe import observe_command  # noqa: E402

main.add_command(observe_command)

from kraft.tools.shell import shell_command  # noqa: E402

main.add_command(shell_command)

from kraft.tools.spark_cli import spark_group  # noqa: E402

main.add_command(spark_group)

from kraft.tools.spark_bench import spark_bench_command  # noqa: E402

bench_group.add_command(spark_bench_command)

if __name__ == "__main__":
    main()
