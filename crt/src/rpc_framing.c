/* RPC framing: CRC-16/CCITT-FALSE, byte stuffing, and a streaming decoder.
 * Format: crt/include/microcompiler/rpc_framing.h and docs/rpc.md. */
#include "microcompiler/rpc_framing.h"

#include "microcompiler/platform.h"

/* CRC of each 4-bit value shifted through the polynomial 0x1021. */
static const uint16_t kCrcNibbleTable[16] = {0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5,
                                             0x60c6, 0x70e7, 0x8108, 0x9129, 0xa14a, 0xb16b,
                                             0xc18c, 0xd1ad, 0xe1ce, 0xf1ef};

uint16_t mc_rpc_crc16(uint16_t crc, const uint8_t* data, size_t len) {
  size_t i;
  for (i = 0; i < len; ++i) {
    crc = (uint16_t)((crc << 4) ^ kCrcNibbleTable[((crc >> 12) ^ (data[i] >> 4)) & 0x0Fu]);
    crc = (uint16_t)((crc << 4) ^ kCrcNibbleTable[((crc >> 12) ^ (data[i] & 0x0Fu)) & 0x0Fu]);
  }
  return crc;
}

/* Escapes bytes into a small staging buffer and hands it to the platform in pieces. */
typedef struct {
  uint8_t bytes[64];
  size_t fill;
  mc_status_t status;
} frame_writer_t;

static void writer_flush(frame_writer_t* writer) {
  if (writer->fill > 0 && writer->status == MC_OK)
    writer->status = mc_platform_write(writer->bytes, writer->fill);
  writer->fill = 0;
}

static void writer_raw(frame_writer_t* writer, uint8_t byte) {
  if (writer->fill == sizeof(writer->bytes)) writer_flush(writer);
  writer->bytes[writer->fill++] = byte;
}

static void writer_escaped(frame_writer_t* writer, const uint8_t* data, size_t len) {
  size_t i;
  for (i = 0; i < len; ++i) {
    if (data[i] == MC_RPC_FLAG || data[i] == MC_RPC_ESCAPE) {
      writer_raw(writer, MC_RPC_ESCAPE);
      writer_raw(writer, (uint8_t)(data[i] ^ MC_RPC_ESCAPE_XOR));
    } else {
      writer_raw(writer, data[i]);
    }
  }
}

mc_status_t mc_rpc_send_frame(const uint8_t* payload, size_t payload_len) {
  frame_writer_t writer;
  uint8_t length[2], crc_bytes[2];
  uint16_t crc;
  if (payload_len > 0xFFFFu || (payload == NULL && payload_len > 0)) return MC_ERR_INVALID_ARGUMENT;
  length[0] = (uint8_t)(payload_len & 0xFFu);
  length[1] = (uint8_t)(payload_len >> 8);
  crc = mc_rpc_crc16(0xFFFFu, length, 2);
  if (payload_len > 0) crc = mc_rpc_crc16(crc, payload, payload_len);
  crc_bytes[0] = (uint8_t)(crc & 0xFFu);
  crc_bytes[1] = (uint8_t)(crc >> 8);
  writer.fill = 0;
  writer.status = MC_OK;
  writer_raw(&writer, MC_RPC_FLAG);
  writer_escaped(&writer, length, 2);
  if (payload_len > 0) writer_escaped(&writer, payload, payload_len);
  writer_escaped(&writer, crc_bytes, 2);
  writer_raw(&writer, MC_RPC_FLAG);
  writer_flush(&writer);
  return writer.status;
}

void mc_rpc_decoder_init(mc_rpc_decoder_t* decoder, uint8_t* buffer, size_t capacity) {
  decoder->buffer = buffer;
  decoder->capacity = capacity;
  decoder->fill = 0;
  decoder->escaped = 0;
  decoder->damaged = 0;
}

static mc_rpc_decode_result_t finish_frame(mc_rpc_decoder_t* decoder, const uint8_t** payload,
                                           size_t* payload_len) {
  const uint8_t* frame = decoder->buffer;
  size_t fill = decoder->fill;
  int damaged = decoder->damaged || decoder->escaped;
  size_t declared;
  uint16_t crc;
  decoder->fill = 0;
  decoder->escaped = 0;
  decoder->damaged = 0;
  if (fill == 0 && !damaged) return MC_RPC_DECODE_NOTHING;
  if (damaged || fill < MC_RPC_FRAME_OVERHEAD) return MC_RPC_DECODE_DAMAGED;
  declared = (size_t)frame[0] | ((size_t)frame[1] << 8);
  if (declared != fill - MC_RPC_FRAME_OVERHEAD) return MC_RPC_DECODE_DAMAGED;
  crc = mc_rpc_crc16(0xFFFFu, frame, fill - 2);
  if (frame[fill - 2] != (uint8_t)(crc & 0xFFu) || frame[fill - 1] != (uint8_t)(crc >> 8))
    return MC_RPC_DECODE_DAMAGED;
  *payload = frame + 2;
  *payload_len = declared;
  return MC_RPC_DECODE_FRAME;
}

mc_rpc_decode_result_t mc_rpc_decoder_feed(mc_rpc_decoder_t* decoder, uint8_t byte,
                                           const uint8_t** payload, size_t* payload_len) {
  if (byte == MC_RPC_FLAG) return finish_frame(decoder, payload, payload_len);
  if (decoder->damaged) return MC_RPC_DECODE_NOTHING; /* skip to the next flag */
  if (byte == MC_RPC_ESCAPE) {
    if (decoder->escaped) decoder->damaged = 1;
    decoder->escaped = 1;
    return MC_RPC_DECODE_NOTHING;
  }
  if (decoder->escaped) {
    byte ^= MC_RPC_ESCAPE_XOR;
    decoder->escaped = 0;
    /* Only a flag or an escape byte is ever escaped: anything else is line noise. */
    if (byte != MC_RPC_FLAG && byte != MC_RPC_ESCAPE) {
      decoder->damaged = 1;
      return MC_RPC_DECODE_NOTHING;
    }
  }
  if (decoder->fill >= decoder->capacity) {
    decoder->damaged = 1;
    return MC_RPC_DECODE_NOTHING;
  }
  decoder->buffer[decoder->fill++] = byte;
  return MC_RPC_DECODE_NOTHING;
}
