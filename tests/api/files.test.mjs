// Files (SPEC §5, §6): everything a record resource does (lib/records.mjs), newest first,
// and the metadata rules: file_name 1-1024 characters, content_type a media type
// (default application/octet-stream), size a whole number >= 0, url http or https,
// document_uuid a UUID, at least one of url and document_uuid; data any JSON.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertStatus, assertValidation, uuid } from './lib/harness.mjs';
import { recordTests } from './lib/records.mjs';

let seq = 0;
const R = recordTests({
  plural: 'files',
  name: 'file',
  body: () => {
    seq += 1;
    return { file_name: `report-${seq}.pdf`, content_type: 'application/pdf', size: 1234, url: `https://files.example.com/r/${seq}.pdf` };
  },
  patch: { body: { file_name: 'renamed.pdf' }, check: (it) => assert.equal(it.file_name, 'renamed.pdf') },
  fields: ['content_type', 'created_at', 'file_name', 'instance_id', 'owner_name', 'owner_uuid', 'size',
    'target_uuid', 'updated_at', 'url', 'uuid', 'version'],
  order: 'newest',
  orderParam: false,
});

const EITHER = 'send url or document_uuid (at least one)';

describe('files: the metadata rules', () => {
  async function post(u, t, json) {
    return R.C.req(u, 'POST', R.coll(t), { json });
  }

  test('only file_name and a url or a document_uuid are needed; content_type has a default', async () => {
    const u = R.C.user();
    const t = uuid();
    const doc = uuid();
    const r = await post(u, t, { file_name: 'a', document_uuid: doc.toUpperCase() });
    assertStatus(r, 201);
    assert.equal(r.body.content_type, 'application/octet-stream');
    assert.equal(r.body.document_uuid, doc);
    assert.equal(r.body.url, undefined);
    assert.equal(r.body.size, undefined);
    const both = await post(u, t, { file_name: 'b', url: 'http://x.example/b', document_uuid: doc, data: { pages: 3 } });
    assertStatus(both, 201);
    assert.deepEqual(both.body.data, { pages: 3 });
    assertValidation(await post(u, t, { url: 'https://x.example/c' }), { file_name: 'required' });
    assertValidation(await post(u, t, { file_name: 'c' }), { url: EITHER, document_uuid: EITHER });
    assertValidation(await post(u, t, { file_name: 'c', url: null, document_uuid: null }), { url: EITHER, document_uuid: EITHER });
  });

  test('file_name is 1 to 1024 characters', async () => {
    const u = R.C.user();
    const t = uuid();
    const ok = await post(u, t, { file_name: 'é'.repeat(1024), url: 'https://x.example/1' }); // 2048 bytes
    assertStatus(ok, 201);
    assert.equal(ok.body.file_name.length, 1024);
    for (const v of ['', 'x'.repeat(1025), 7, null, ['a'], 'a\u0000b']) {
      assertValidation(await post(u, t, { file_name: v, url: 'https://x.example/1' }), { file_name: true });
    }
  });

  test('size is a whole number of 0 or more', async () => {
    const u = R.C.user();
    const t = uuid();
    for (const v of [0, 1, 9007199254740991]) {
      const r = await post(u, t, { file_name: 'f', url: 'https://x.example/f', size: v });
      assertStatus(r, 201);
      assert.equal(r.body.size, v);
    }
    for (const v of [-1, 1.5, '10', true, {}]) {
      assertValidation(await post(u, t, { file_name: 'f', url: 'https://x.example/f', size: v }), { size: true });
    }
  });

  test('url is an http or https URL naming a host', async () => {
    const u = R.C.user();
    const t = uuid();
    for (const v of ['http://x.example', 'https://x.example:8443/a/b.pdf?sig=1%2F2#p', 'HTTPS://X.EXAMPLE/A']) {
      assertStatus(await post(u, t, { file_name: 'f', url: v }), 201);
    }
    for (const v of ['ftp://x.example/f', 'file:///etc/passwd', 'javascript:alert(1)', '/relative/f.pdf', 'x.example/f',
      'https://x.example/a b', 'http:///f', 'https://', '', 5]) {
      assertValidation(await post(u, t, { file_name: 'f', url: v }), { url: true });
    }
    assertValidation(await post(u, t, { file_name: 'f', url: 'https://x.example/', document_uuid: 'doc-1' }),
      { document_uuid: /UUID/ });
  });

  test('content_type is a media type', async () => {
    const u = R.C.user();
    const t = uuid();
    for (const v of ['text/plain', 'text/plain; charset=utf-8', 'application/vnd.ms-excel', 'image/svg+xml']) {
      const r = await post(u, t, { file_name: 'f', url: 'https://x.example/f', content_type: v });
      assertStatus(r, 201);
      assert.equal(r.body.content_type, v);
    }
    for (const v of ['', 'pdf', 'text/', '/plain', 'text/plain extra', 'a/b/c', 'text/pl ain', 7, null]) {
      assertValidation(await post(u, t, { file_name: 'f', url: 'https://x.example/f', content_type: v }),
        { content_type: true });
    }
  });

  test('PATCH keeps the rules: null removes url or document_uuid, but not both', async () => {
    const u = R.C.user();
    const t = uuid();
    const doc = uuid();
    const f = (await post(u, t, { file_name: 'f', url: 'https://x.example/f', document_uuid: doc })).body;
    const one = R.one(t, f.uuid);
    const r = await R.C.req(u, 'PATCH', one, { json: { url: null, size: 10, content_type: 'text/csv', data: [1] } });
    assertStatus(r, 200);
    assert.equal(r.body.url, undefined);
    assert.equal(r.body.document_uuid, doc);
    assert.equal(r.body.size, 10);
    assertValidation(await R.C.req(u, 'PATCH', one, { json: { document_uuid: null } }), { url: EITHER, document_uuid: EITHER });
    assertValidation(await R.C.req(u, 'PATCH', one, { json: { url: 'ftp://x.example/f' } }), { url: true });
    assertValidation(await R.C.req(u, 'PATCH', one, { json: { content_type: 'nope' } }), { content_type: true });
    assertValidation(await R.C.req(u, 'PATCH', one, { json: { file_name: '' } }), { file_name: true });
    const swap = await R.C.req(u, 'PATCH', one, { json: { url: 'https://y.example/g', document_uuid: null } });
    assertStatus(swap, 200);
    assert.equal(swap.body.url, 'https://y.example/g');
    assert.equal(swap.body.document_uuid, undefined);
    assert.equal(swap.body.version, 3);
  });
});
