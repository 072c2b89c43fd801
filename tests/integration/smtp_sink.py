"""aiosmtpd handler for svc's identity tests: every message received is written as one
JSON file (envelope, headers, decoded plain-text body, whether the session used TLS) into
the directory named by the class argument.

    PYTHONPATH=tests/integration python3 -m aiosmtpd -n -l 127.0.0.1:PORT \
        -c smtp_sink.Sink OUTDIR [--tlscert CERT --tlskey KEY]
"""

import email
import email.policy
import json
import os
import time


class Sink:
    def __init__(self, outdir):
        self.outdir = outdir
        self.count = 0

    @classmethod
    def from_cli(cls, parser, *args):
        if len(args) != 1:
            parser.error("smtp_sink.Sink takes one argument: the output directory")
        return cls(args[0])

    async def handle_DATA(self, server, session, envelope):
        raw = envelope.original_content or envelope.content
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        part = msg.get_body(preferencelist=("plain",))
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "from": str(msg["from"]),
            "to": str(msg["to"]),
            "subject": str(msg["subject"]),
            "body": part.get_content() if part is not None else "",
            "tls": session.ssl is not None,
        }
        self.count += 1
        name = "%020d-%04d" % (time.time_ns(), self.count)
        tmp = os.path.join(self.outdir, "." + name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.rename(tmp, os.path.join(self.outdir, name + ".json"))
        return "250 Message accepted for delivery"
