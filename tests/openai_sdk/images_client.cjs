// The OpenAI Node SDK against `truegreen serve` (tests/server_openai_sdk_test.cc).
// Usage: node images_client.cjs SDK_DIR BASE_URL   (BASE_URL ends in /v1)
// Prints one JSON object with what the SDK returned; exits 1 on an unexpected SDK error.
const OpenAI = require(process.argv[2]);
const client = new OpenAI({ apiKey: 'unused', baseURL: process.argv[3], maxRetries: 0 });

async function main() {
  const out = {};
  const b64 = await client.images.generate({
    model: 'dall-e-3', prompt: 'a red bicycle', size: '256x256', n: 2,
    response_format: 'b64_json', steps: 2,
  });
  out.b64 = b64.data.map((d) => Buffer.from(d.b64_json, 'base64').subarray(1, 4).toString());
  const url = await client.images.generate({ prompt: 'a red bicycle', size: '256x256', steps: 2 });
  out.urls = [];
  for (const d of url.data) {
    const r = await fetch(d.url);
    const bytes = Buffer.from(await r.arrayBuffer());
    out.urls.push({ status: r.status, type: r.headers.get('content-type'),
                    magic: bytes.subarray(1, 4).toString() });
  }
  const stream = await client.images.generate({
    prompt: 'a red bicycle', size: '512x512', steps: 12, stream: true, partial_images: 2,
  });
  out.events = [];
  for await (const ev of stream) {
    out.events.push({ type: ev.type, index: ev.partial_image_index,
                      png: Buffer.from(ev.b64_json, 'base64').subarray(1, 4).toString() });
  }
  const models = await client.models.list();
  out.models = [];
  for await (const m of models) out.models.push(m.id);
  out.errors = [];
  for (const body of [{ prompt: 'x', size: '0x0' }, { prompt: 'x', output_format: 'webp' },
                      { prompt: 'x', model: 'gpt-image-1' }]) {
    try {
      await client.images.generate(body);
      out.errors.push({ unexpected: 'success' });
    } catch (e) {
      if (!(e instanceof OpenAI.APIError)) throw e;
      out.errors.push({ status: e.status, type: e.type, param: e.param, code: e.code,
                        message: e.message });
    }
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
