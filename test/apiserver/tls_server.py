"""HTTPS for the stand-ins' http.server servers (the API server, the kubelet API, webhooks),
with each connection's TLS handshake in that connection's own thread, as Go's net/http
serves kube-apiserver and kubelet: a client that connects and sends nothing holds up only
itself. Wrapping the listening socket instead (ssl's wrap_socket on server.socket) runs
every handshake inside accept(), in the one thread that serves the listener: such a client
then stalls every other client and the server's shutdown() until it goes away.

Go's side (src/net/http/server.go): (*Server).Serve starts `go c.serve(connCtx)` for each
accepted connection, and (*conn).serve runs the handshake (tlsConn.HandshakeContext) in
that goroutine; crypto/tls's listener returns connections from Accept without one."""
import socket

# A handshake not done by then is given up (its connection closed). This bound is the
# stand-in's own, not a figure of kubelet or kube-apiserver: Go bounds a handshake by the
# server's tlsHandshakeTimeout() (the smallest of its Read/ReadHeader/WriteTimeout, none
# when all are unset), and each component sets those its own way.
HANDSHAKE_TIMEOUT_S = 10.0


def serve_tls(server, context, handshake_timeout_s=HANDSHAKE_TIMEOUT_S):
    """Makes `server` (a socketserver.ThreadingMixIn server, not yet serving) answer over
    TLS with the server-side SSLContext `context`."""
    plain = server.finish_request

    def finish_request(request, client_address):
        # In the connection's thread (ThreadingMixIn.process_request_thread).
        request.settimeout(handshake_timeout_s)
        try:
            conn = context.wrap_socket(request, server_side=True)
        except (OSError, ValueError):
            return  # shutdown_request closes the plain socket
        conn.settimeout(None)  # the handler's own `timeout`, if any, is set in its setup()
        try:
            plain(conn, client_address)
        finally:
            try:
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            conn.close()

    server.finish_request = finish_request
