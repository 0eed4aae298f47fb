"""A minimal SSH server on 127.0.0.1 for testing the guest client without a VM.

It accepts one public key, answers `exec` requests with a canned reply and exit status, and
presents a chosen host key, so host key pinning and command results can be checked for real.
"""

from __future__ import annotations

import io
import socket
import threading

import paramiko

from sectorlab.guest.sshkeys import KeyPair


class _Server(paramiko.ServerInterface):
    def __init__(self, user: str, allowed: paramiko.PKey, replies: dict[str, tuple[int, str, str]]):
        self.user = user
        self.allowed = allowed
        self.replies = replies
        self.pending: dict[int, str] = {}

    def check_auth_publickey(self, username, key):
        ok = username == self.user and key.get_base64() == self.allowed.get_base64()
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def get_allowed_auths(self, username):
        return "publickey"

    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel, command):
        # Answered from the serving thread once the request has been acknowledged (see _answer).
        self.pending[channel.get_id()] = command.decode()
        return True


class SSHServer:
    def __init__(self, host_key: KeyPair, user: str, login_key: KeyPair, replies: dict[str, tuple[int, str, str]]):
        self.host_key = paramiko.Ed25519Key.from_private_key(io.StringIO(host_key.private_openssh))
        self.server = _Server(user, paramiko.PKey.from_type_string(*_split(login_key.public_openssh)), replies)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(10)
        self.port = self.sock.getsockname()[1]
        self.transports: list[paramiko.Transport] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            transport = paramiko.Transport(conn)
            transport.add_server_key(self.host_key)
            self.transports.append(transport)
            try:
                transport.start_server(server=self.server)
            except (paramiko.SSHException, EOFError):
                continue
            threading.Thread(target=self._answer, args=(transport,), daemon=True).start()

    def _answer(self, transport: paramiko.Transport):
        while transport.is_active():
            channel = transport.accept(timeout=1)
            if channel is None:
                continue
            for _ in range(100):
                if channel.get_id() in self.server.pending:
                    break
                threading.Event().wait(0.05)
            command = self.server.pending.pop(channel.get_id(), "")
            reply = self.server.replies.get(command, (127, "", f"sh: {command}: not found\n"))
            # A callable reply talks with the client over the channel first (a question on stdout,
            # an answer on stdin), then returns the status and the rest of the output.
            # One that returns None has ended the connection itself (a guest that went away).
            answered = reply(channel) if callable(reply) else reply
            if answered is None:
                return
            rc, out, err = answered
            channel.sendall(out.encode())
            channel.sendall_stderr(err.encode())
            channel.send_exit_status(rc)
            channel.close()

    def close(self):
        self.sock.close()
        for t in self.transports:
            t.close()


def _split(line: str) -> tuple[str, bytes]:
    import base64
    kind, data = line.split()[:2]
    return kind, base64.b64decode(data)
