// Comments (SPEC §5, §6): everything a record resource does (lib/records.mjs), oldest
// first with ?order=desc, and replies: parent_uuid names a live comment of the same
// record, else 400.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertStatus, assertValidation, uuid } from './lib/harness.mjs';
import { ids, recordTests } from './lib/records.mjs';

const R = recordTests({
  plural: 'comments',
  name: 'comment',
  body: () => ({ data: { text: 'looks good', n: [1, 2.5, null, true] } }),
  patch: { body: { data: 'edited' }, check: (it) => assert.equal(it.data, 'edited') },
  fields: ['created_at', 'data', 'instance_id', 'owner_name', 'owner_uuid', 'target_uuid', 'updated_at',
    'uuid', 'version'],
  order: 'oldest',
  orderParam: true,
});

describe('comments: their own rules', () => {
  test('data is required on create, any JSON', async () => {
    const { C, coll } = R;
    const u = C.user();
    const t = uuid();
    assertValidation(await C.req(u, 'POST', coll(t), { json: {} }), { data: 'required' });
    for (const data of ['text', 0, -7, 1.5, false, null, [], {}, { a: { b: [1, 'x'] } }]) {
      const r = await C.req(u, 'POST', coll(t), { json: { data } });
      assertStatus(r, 201);
      assert.deepEqual(r.body.data, data);
    }
  });

  test('a reply names its parent; the parent is a live comment of the same record', async () => {
    const { C, coll, one, create } = R;
    const u = C.user();
    const t = uuid();
    const parent = await create(u, t);
    const m = C.mate(u);
    const reply = await C.req(m, 'POST', coll(t), { json: { data: 'me too', parent_uuid: parent.uuid.toUpperCase() } });
    assertStatus(reply, 201);
    assert.equal(reply.body.parent_uuid, parent.uuid);
    const nested = await C.req(u, 'POST', coll(t), { json: { data: 'and again', parent_uuid: reply.body.uuid } });
    assertStatus(nested, 201);
    assert.deepEqual(ids((await C.list(u, coll(t))).items), [parent.uuid, reply.body.uuid, nested.body.uuid]);

    const bad = 'must be the uuid of a comment of this record that is not deleted';
    // no such comment; a comment of another record; of another tenant on this record id
    assertValidation(await C.req(u, 'POST', coll(t), { json: { data: 1, parent_uuid: uuid() } }), { parent_uuid: bad });
    const elsewhere = await create(u, uuid());
    assertValidation(await C.req(u, 'POST', coll(t), { json: { data: 1, parent_uuid: elsewhere.uuid } }), { parent_uuid: bad });
    const foreign = await create(C.user(), t);
    assertValidation(await C.req(u, 'POST', coll(t), { json: { data: 1, parent_uuid: foreign.uuid } }), { parent_uuid: bad });
    // not a UUID
    for (const v of ['x', 7, '', null]) {
      assertValidation(await C.req(u, 'POST', coll(t), { json: { data: 1, parent_uuid: v } }), { parent_uuid: /UUID/ });
    }
    // a deleted parent takes no new replies; its replies stay
    assertStatus(await C.req(u, 'DELETE', one(t, parent.uuid)), 204);
    assertValidation(await C.req(u, 'POST', coll(t), { json: { data: 1, parent_uuid: parent.uuid } }), { parent_uuid: bad });
    assert.deepEqual(ids((await C.list(u, coll(t))).items), [reply.body.uuid, nested.body.uuid]);
    // a reply of a deleted parent is restored all the same
    assertStatus(await C.req(u, 'DELETE', one(t, nested.body.uuid)), 204);
    assertStatus(await C.req(u, 'POST', `${one(t, nested.body.uuid)}/restore`), 200);
    // restored, it takes them again
    assertStatus(await C.req(u, 'POST', `${one(t, parent.uuid)}/restore`), 200);
    assertStatus(await C.req(u, 'POST', coll(t), { json: { data: 1, parent_uuid: parent.uuid } }), 201);
    // a comment cannot answer itself (its own uuid names nothing yet)
    const self = uuid();
    assertValidation(await C.req(u, 'POST', coll(t), { json: { uuid: self, data: 1, parent_uuid: self } }), { parent_uuid: bad });
  });

  test('parent_uuid is set on create only', async () => {
    const { C, one, create } = R;
    const u = C.user();
    const t = uuid();
    const a = await create(u, t);
    const b = await create(u, t);
    assertValidation(await C.req(u, 'PATCH', one(t, b.uuid), { json: { parent_uuid: a.uuid } }),
      { parent_uuid: 'cannot be changed once created' });
    const empty = await C.req(u, 'PATCH', one(t, b.uuid), { json: {} });
    assertValidation(empty, { data: 'send data to change' });
  });
});
