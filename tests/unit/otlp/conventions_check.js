// What a heartbeat's decoded OTLP requests must say to follow the
// OpenTelemetry GenAI semantic conventions: the span tree (one invoke_agent
// root continuing the operator's trace context, chat and execute_tool
// children), span names and kinds, attribute names from the conventions'
// registry, and the client metrics' names, units and bucket bounds, in the
// v1.36 names or (opted in) the latest experimental ones; and the
// operator's span of the heartbeat, which the runner's trace continues.
// Each check returns the problems it found; none means the requests pass.
'use strict';

const kSpanKindInternal = 1;
const kSpanKindClient = 3;
const kSpanKindProducer = 4;
const kTokenBounds = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                      16777216, 67108864];
const kSecondsBounds = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                        40.96, 81.92];
// The registry's gen_ai.* attributes a heartbeat may carry (a misspelt one
// is a problem).
const kGenAiAttributes = new Set([
  'gen_ai.operation.name', 'gen_ai.provider.name', 'gen_ai.request.model', 'gen_ai.response.model',
  'gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens',
  'gen_ai.usage.cache_read.input_tokens', 'gen_ai.usage.cache_write.input_tokens',
  'gen_ai.agent.name', 'gen_ai.agent.id', 'gen_ai.conversation.id', 'gen_ai.tool.name',
  'gen_ai.tool.call.id', 'gen_ai.tool.type', 'gen_ai.token.type', 'gen_ai.token.modality',
]);
const kProviders = new Set(['openai', 'anthropic']);
const kMetricsV136 = {
  'gen_ai.client.token.usage': { unit: '{token}', bounds: kTokenBounds },
  'gen_ai.client.operation.duration': { unit: 's', bounds: kSecondsBounds },
};
const kMetricsLatest = {
  'gen_ai.client.inference.duration': { unit: 's', bounds: kSecondsBounds },
  'gen_ai.client.inference.operation.input_tokens': { unit: '{token}', bounds: kTokenBounds },
  'gen_ai.client.inference.operation.output_tokens': { unit: '{token}', bounds: kTokenBounds },
  'gen_ai.client.inference.usage.input_tokens': { unit: '{token}', counter: true },
  'gen_ai.client.inference.usage.output_tokens': { unit: '{token}', counter: true },
  'gen_ai.client.inference.usage.cache_read.input_tokens': { unit: '{token}', counter: true },
  'gen_ai.client.inference.usage.cache_write.input_tokens': { unit: '{token}', counter: true },
};

function attributes(item) {
  const out = {};
  for (const { key, value } of item.attributes || []) {
    const v = value || {};
    out[key] = v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue;
  }
  return out;
}

function allSpans(traceRequests) {
  const spans = [];
  for (const request of traceRequests) {
    for (const rs of request.resourceSpans || []) {
      for (const ss of rs.scopeSpans || []) {
        for (const span of ss.spans || []) spans.push({ span, resource: attributes(rs.resource || {}) });
      }
    }
  }
  return spans;
}

function checkAttributeNames(where, attrs, problems) {
  for (const key of Object.keys(attrs)) {
    if (key.startsWith('gen_ai.') && !kGenAiAttributes.has(key)) {
      problems.push(`${where}: attribute ${key} is not in the GenAI conventions' registry`);
    }
  }
}

function checkChild(span, attrs, rootId, problems) {
  const where = `span "${span.name}"`;
  if (span.parentSpanId !== rootId) problems.push(`${where}: parent is not the invoke_agent span`);
  const operation = attrs['gen_ai.operation.name'];
  if (operation === 'chat') {
    if (span.kind !== kSpanKindClient) problems.push(`${where}: a chat span is CLIENT`);
    if (span.name !== `chat ${attrs['gen_ai.request.model']}`) {
      problems.push(`${where}: named "{gen_ai.operation.name} {gen_ai.request.model}"`);
    }
    if (!kProviders.has(attrs['gen_ai.provider.name'])) problems.push(`${where}: gen_ai.provider.name`);
    for (const key of ['gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens']) {
      if (!/^[0-9]+$/.test(String(attrs[key]))) problems.push(`${where}: ${key} is an int`);
    }
  } else if (operation === 'execute_tool') {
    if (span.kind !== kSpanKindInternal) problems.push(`${where}: an execute_tool span is INTERNAL`);
    if (!attrs['gen_ai.tool.name'] || span.name !== `execute_tool ${attrs['gen_ai.tool.name']}`) {
      problems.push(`${where}: named "execute_tool {gen_ai.tool.name}"`);
    }
  } else {
    problems.push(`${where}: gen_ai.operation.name "${operation}" is neither chat nor execute_tool`);
  }
}

// expect: {traceId, parentSpanId, agent, namespace, run}
function checkTrace(traceRequests, expect) {
  const problems = [];
  const spans = allSpans(traceRequests);
  const roots = spans.filter(({ span }) => attributes(span)['gen_ai.operation.name'] === 'invoke_agent');
  if (roots.length !== 1) return [`${roots.length} invoke_agent spans, not one`];
  const { span: root, resource } = roots[0];
  const rootAttrs = attributes(root);
  if (root.name !== `invoke_agent ${expect.agent}`) problems.push(`root named "${root.name}"`);
  if (root.kind !== kSpanKindInternal) problems.push('the invoke_agent span is INTERNAL');
  if (root.parentSpanId !== expect.parentSpanId) {
    problems.push(`the invoke_agent span's parent ${root.parentSpanId} is not TRACEPARENT's`);
  }
  if (rootAttrs['gen_ai.agent.name'] !== expect.agent) problems.push('gen_ai.agent.name');
  if (rootAttrs['gen_ai.conversation.id'] !== expect.run) problems.push('gen_ai.conversation.id');
  if (!resource['service.name']) problems.push('no service.name resource attribute');
  if (resource['k8s.namespace.name'] !== expect.namespace) problems.push('k8s.namespace.name');
  const counts = { chat: 0, execute_tool: 0 };
  for (const { span } of spans) {
    const attrs = attributes(span);
    checkAttributeNames(`span "${span.name}"`, attrs, problems);
    if (span.traceId !== expect.traceId) problems.push(`span "${span.name}": trace ${span.traceId}`);
    if (BigInt(span.startTimeUnixNano) > BigInt(span.endTimeUnixNano)) {
      problems.push(`span "${span.name}" ends before it starts`);
    }
    if (span === root) continue;
    checkChild(span, attrs, root.spanId, problems);
    counts[attrs['gen_ai.operation.name']] = (counts[attrs['gen_ai.operation.name']] || 0) + 1;
  }
  if (counts.chat < 1) problems.push('no chat span');
  if (counts.execute_tool < 1) problems.push('no execute_tool span');
  return problems;
}

function checkMetric(metric, spec, problems) {
  const where = `metric ${metric.name}`;
  if (metric.unit !== spec.unit) problems.push(`${where}: unit ${metric.unit}, not ${spec.unit}`);
  const data = spec.counter ? metric.sum : metric.histogram;
  if (!data) return problems.push(`${where}: not a ${spec.counter ? 'sum' : 'histogram'}`);
  if (spec.counter && !data.isMonotonic) problems.push(`${where}: a counter is monotonic`);
  for (const point of data.dataPoints || []) {
    const attrs = attributes(point);
    checkAttributeNames(where, attrs, problems);
    if (!attrs['gen_ai.operation.name'] || !kProviders.has(attrs['gen_ai.provider.name'])) {
      problems.push(`${where}: gen_ai.operation.name and gen_ai.provider.name are required`);
    }
    if (spec.bounds && JSON.stringify(point.explicitBounds) !== JSON.stringify(spec.bounds)) {
      problems.push(`${where}: bucket bounds ${JSON.stringify(point.explicitBounds)}`);
    }
    if (metric.name === 'gen_ai.client.token.usage' &&
        !['input', 'output'].includes(attrs['gen_ai.token.type'])) {
      problems.push(`${where}: gen_ai.token.type`);
    }
    if (metric.name.startsWith('gen_ai.client.inference.usage.') && !attrs['gen_ai.token.modality']) {
      problems.push(`${where}: gen_ai.token.modality is required`);
    }
  }
  return problems;
}

// latest: OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental was set.
function checkMetrics(metricRequests, latest) {
  const problems = [];
  const specs = latest ? kMetricsLatest : kMetricsV136;
  const seen = new Set();
  for (const request of metricRequests) {
    for (const rm of request.resourceMetrics || []) {
      for (const sm of rm.scopeMetrics || []) {
        for (const metric of sm.metrics || []) {
          seen.add(metric.name);
          const spec = specs[metric.name];
          if (!spec) problems.push(`metric ${metric.name} is not one of the chosen conventions'`);
          else checkMetric(metric, spec, problems);
        }
      }
    }
  }
  const required = latest ? ['gen_ai.client.inference.duration', 'gen_ai.client.inference.usage.input_tokens']
                          : ['gen_ai.client.token.usage', 'gen_ai.client.operation.duration'];
  for (const name of required) if (!seen.has(name)) problems.push(`no ${name}`);
  return problems;
}

// The operator's one span of a heartbeat (scheduling to Job creation) and
// its link: the runner's invoke_agent span is its child in the same trace.
// expect: {traceId, agent, namespace, run}
function checkOperatorSpan(operatorRequests, runnerRequests, expect) {
  const spans = allSpans(operatorRequests);
  if (spans.length !== 1) return [`${spans.length} operator spans, not one`];
  const problems = [];
  const { span, resource } = spans[0];
  const attrs = attributes(span);
  if (span.name !== 'schedule_heartbeat') problems.push(`operator span named "${span.name}"`);
  if (span.kind !== kSpanKindProducer) problems.push('the operator span is PRODUCER');
  if (span.parentSpanId) problems.push('the operator span is the trace\'s root');
  if (span.traceId !== expect.traceId) problems.push(`operator span's trace ${span.traceId}`);
  if (BigInt(span.startTimeUnixNano) > BigInt(span.endTimeUnixNano)) {
    problems.push('the operator span ends before it starts');
  }
  if (resource['service.name'] !== 'heartbeat-operator') problems.push('operator service.name');
  const want = { 'heartbeat.agent.name': expect.agent, 'heartbeat.run.name': expect.run,
                 'k8s.namespace.name': expect.namespace, 'heartbeat.invocation_source': 'scheduler' };
  for (const [key, value] of Object.entries(want)) {
    if (attrs[key] !== value) problems.push(`operator span: ${key} is ${attrs[key]}`);
  }
  if (!attrs['k8s.job.name']) problems.push('operator span: no k8s.job.name');
  for (const key of Object.keys(attrs)) {
    if (key.startsWith('gen_ai.')) problems.push(`operator span: ${key} (not a GenAI operation)`);
  }
  const roots = allSpans(runnerRequests).filter(
      ({ span: s }) => attributes(s)['gen_ai.operation.name'] === 'invoke_agent');
  if (roots.length !== 1) return problems.concat([`${roots.length} invoke_agent spans, not one`]);
  const root = roots[0].span;
  if (root.traceId !== span.traceId) problems.push('the runner\'s trace is not the operator\'s');
  if (root.parentSpanId !== span.spanId) {
    problems.push(`invoke_agent's parent ${root.parentSpanId} is not the operator span ${span.spanId}`);
  }
  return problems;
}

module.exports = { checkTrace, checkMetrics, checkOperatorSpan, attributes };
