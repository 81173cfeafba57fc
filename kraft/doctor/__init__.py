"""``kraft doctor`` and ``kraft storage recover-quorum``: what is wrong with a quorum, and the way out.
May import kraft.admin_client, kraft.config, kraft.dirlock, kraft.raft (the election state's rules), kraft.records, kraft.wire and kraft.messages; never kraft.node or tools.

The way out is for a quorum that lost its majority for good.

- :mod:`kraft.doctor.findings`: findings as data, their one-line and JSON
  forms and the exit status;
- :mod:`kraft.doctor.local`: offline checks over data directories and
  configuration files (read-only);
- :mod:`kraft.doctor.live`: checks over what each reachable voter answered
  (DescribeQuorum, ApiVersions, DescribeCluster: Kafka's public RPCs);
- :mod:`kraft.doctor.quorum_recovery`: the single-voter recovery;
- is a directory in use by a running process: :func:`kraft.dirlock.directory_locked`.
"""
