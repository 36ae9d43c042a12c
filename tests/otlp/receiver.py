"""A small OTLP trace receiver for toolwright's tests.

Serves OTLP/HTTP (POST /v1/traces, a protobuf ExportTraceServiceRequest) and OTLP/gRPC
(opentelemetry.proto.collector.trace.v1.TraceService/Export) on loopback ports of its own,
decodes with the official opentelemetry-proto classes, and writes each span as one JSON line
to stdout: name, kind, trace_id, span_id, parent_span_id (hex), attributes, links (trace_id and span_id, hex), status, and the
resource's service.name, and the request's `x-tenant` header (or gRPC metadata) as
"tenant". The first line is {"http": PORT, "grpc": PORT}.

Usage: receiver.py [--tls CERT_PEM KEY_PEM]   (with --tls both listen for TLS only)
"""

import json
import ssl
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1 import trace_pb2

LOCK = threading.Lock()


def value(v):
    """An AnyValue as plain JSON."""
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind) if kind else None


def write(request, protocol, tenant):
    """One JSON line per span of an ExportTraceServiceRequest."""
    lines = []
    for rs in request.resource_spans:
        resource = {kv.key: value(kv.value) for kv in rs.resource.attributes}
        for ss in rs.scope_spans:
            for span in ss.spans:
                lines.append(json.dumps({
                    "protocol": protocol,
                    "tenant": tenant,
                    "service": resource.get("service.name"),
                    "scope": ss.scope.name,
                    "name": span.name,
                    "kind": trace_pb2.Span.SpanKind.Name(span.kind),
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "attributes": {kv.key: value(kv.value) for kv in span.attributes},
                    "links": [
                        {"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()}
                        for l in span.links
                    ],
                    "status": {
                        "code": trace_pb2.Status.StatusCode.Name(span.status.code),
                        "message": span.status.message,
                    },
                    "duration_ns": span.end_time_unix_nano - span.start_time_unix_nano,
                }))
    with LOCK:
        for line in lines:
            sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Http(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(404 if self.path != "/v1/traces" else 415)
            self.end_headers()
            return
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        write(request, "http/protobuf", self.headers.get("x-tenant"))
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


class Traces(trace_service_pb2_grpc.TraceServiceServicer):
    def Export(self, request, context):
        tenant = dict(context.invocation_metadata()).get("x-tenant")
        write(request, "grpc", tenant)
        return trace_service_pb2.ExportTraceServiceResponse()


def main():
    tls = sys.argv[2:4] if sys.argv[1:2] == ["--tls"] else None
    http = ThreadingHTTPServer(("127.0.0.1", 0), Http)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls[0], tls[1])
        http.socket = context.wrap_socket(http.socket, server_side=True)
        with open(tls[0], "rb") as cert, open(tls[1], "rb") as key:
            credentials = grpc.ssl_server_credentials([(key.read(), cert.read())])
        grpc_port = server.add_secure_port("127.0.0.1:0", credentials)
    else:
        grpc_port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    with LOCK:
        print(json.dumps({"http": http.server_address[1], "grpc": grpc_port}), flush=True)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    # Runs until its stdin closes (the test dropped it).
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
