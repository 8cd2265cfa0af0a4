"""The filesystem broker with atomic message files (the default broker: no server to run).

kombu's filesystem transport creates a message file under its final name, then writes it. A
worker polling the folder can take the file in between, read nothing, and die on the empty
message ("Unrecoverable error: JSONDecodeError"): seen with the local-LLM profile, where an
estimation run's coordinator re-sends itself every half second to the question worker's
queue, which stopped the question worker and left the run hanging. Here a message is written
under a name no reader takes (it ends in ``.partial``; readers take ``<...>.<queue>.msg``),
then renamed into place, so a reader sees either no file or the whole message.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]  # kombu's filesystem channel names it payload; the stubs, message
        """Put ``payload`` onto ``queue``: written beside, then renamed (atomic on one filesystem)."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = f"{final}.partial"
        try:
            with open(partial, "wb") as fh:
                fh.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
