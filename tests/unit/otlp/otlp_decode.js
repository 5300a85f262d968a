// Decodes OTLP/HTTP export requests with the OpenTelemetry project's own
// message definitions: the protobufjs classes generated from
// opentelemetry-proto that @opentelemetry/otlp-transformer ships
// (package.json pins the version). Strict where OTLP/JSON is: every field
// name must be one the message defines (lowerCamelCase), trace and span ids
// hex of the right length, enums integers. What decodes is encoded to the
// protobuf wire format and decoded again, so a request that passes is one a
// Collector's OTLP receiver reads the same way.
'use strict';

const path = require('node:path');

// HB_OTLP_NODE_MODULES: where scripts/install-otlp-receiver.sh installed
// the packages; else a node_modules beside this file.
function loadRoot() {
  const modules = process.env.HB_OTLP_NODE_MODULES || path.join(__dirname, 'node_modules');
  return require(
    path.join(modules, '@opentelemetry/otlp-transformer/build/src/generated/root.js'));
}

const proto = loadRoot().opentelemetry.proto;
const kRequestTypes = {
  '/v1/traces': proto.collector.trace.v1.ExportTraceServiceRequest,
  '/v1/metrics': proto.collector.metrics.v1.ExportMetricsServiceRequest,
  '/v1/logs': proto.collector.logs.v1.ExportLogsServiceRequest,
};
const kIdHexDigits = { traceId: 32, spanId: 16, parentSpanId: 16 };
const kEnumFields = new Set(['kind', 'code', 'aggregationTemporality', 'severityNumber']);

function isMessage(value) {
  return value !== null && typeof value === 'object' && value.constructor &&
         typeof value.constructor.encode === 'function';
}

// OTLP/JSON writes ids as hex; protobufjs's JSON mapping wants base64.
function hexIdsToBase64(value, where, problems) {
  if (Array.isArray(value)) return value.map((v, i) => hexIdsToBase64(v, `${where}[${i}]`, problems));
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, v] of Object.entries(value)) {
    if (key in kIdHexDigits && typeof v === 'string') {
      const empty = v === '' && key === 'parentSpanId';
      if (!empty && !new RegExp(`^[0-9a-f]{${kIdHexDigits[key]}}$`).test(v)) {
        problems.push(`${where}.${key}: "${v}" is not ${kIdHexDigits[key]} lower-case hex digits`);
      }
      out[key] = Buffer.from(v, 'hex').toString('base64');
    } else {
      if (kEnumFields.has(key) && !Number.isInteger(v)) {
        problems.push(`${where}.${key}: an enum is an integer in OTLP/JSON, not ${JSON.stringify(v)}`);
      }
      out[key] = hexIdsToBase64(v, `${where}.${key}`, problems);
    }
  }
  return out;
}

// Every key of `json` must be a field of the message it decoded into.
function unknownFields(json, message, where, problems) {
  if (Array.isArray(json)) {
    json.forEach((v, i) => unknownFields(v, message && message[i], `${where}[${i}]`, problems));
    return;
  }
  if (json === null || typeof json !== 'object' || !isMessage(message)) return;
  const fields = new Set(Object.keys(Object.getPrototypeOf(message)).filter((k) => k !== 'toJSON'));
  for (const key of Object.keys(json)) {
    if (!fields.has(key)) {
      problems.push(`${where}.${key}: ${message.constructor.name} has no such field`);
    } else {
      unknownFields(json[key], message[key], `${where}.${key}`, problems);
    }
  }
}

function base64IdsToHex(value) {
  if (Array.isArray(value)) return value.map(base64IdsToHex);
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = key in kIdHexDigits && typeof v === 'string' ? Buffer.from(v, 'base64').toString('hex')
                                                             : base64IdsToHex(v);
  }
  return out;
}

// {request, problems}: the request as the definitions read it (ids hex,
// 64-bit integers as decimal strings, enums as numbers); problems empty
// when it is a valid OTLP request.
function decodeRequest(urlPath, contentType, body) {
  const type = kRequestTypes[urlPath];
  if (!type) return { request: null, problems: [`no OTLP signal at ${urlPath}`] };
  const problems = [];
  let message;
  if ((contentType || '').startsWith('application/x-protobuf')) {
    message = type.decode(body);
  } else if ((contentType || '').startsWith('application/json')) {
    let json;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch (error) {
      return { request: null, problems: [`not JSON: ${error.message}`] };
    }
    message = type.fromObject(hexIdsToBase64(json, type.name, problems));
    unknownFields(json, message, type.name, problems);
  } else {
    return { request: null, problems: [`content type "${contentType}" is neither OTLP encoding`] };
  }
  const wire = type.decode(type.encode(message).finish());
  const request = base64IdsToHex(
      type.toObject(wire, { longs: String, enums: Number, bytes: String, arrays: true }));
  return { request, problems };
}

module.exports = { decodeRequest, proto };
