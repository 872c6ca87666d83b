/* RPC framing: how RPC messages travel over a byte stream (a UART, a pty, a pipe).
 *
 * A frame on the wire (full description and golden vectors in docs/rpc.md):
 *
 *   0x7E | escaped( length:u16 LE | payload | crc:u16 LE ) | 0x7E
 *
 * crc is CRC-16/CCITT-FALSE (polynomial 0x1021, initial value 0xFFFF, no
 * reflection, no final XOR) over the length and payload bytes. Escaping: a
 * 0x7E or 0x7D byte inside the frame is sent as 0x7D followed by the byte
 * XOR 0x20. Empty frames (two flags in a row) are ignored, so a sender may
 * start each frame with a flag to resynchronise the receiver.
 */
#ifndef MICROCOMPILER_RPC_FRAMING_H_
#define MICROCOMPILER_RPC_FRAMING_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MC_RPC_FLAG 0x7Eu
#define MC_RPC_ESCAPE 0x7Du
#define MC_RPC_ESCAPE_XOR 0x20u
/* Length and CRC fields around the payload. */
#define MC_RPC_FRAME_OVERHEAD 4u

/* CRC-16/CCITT-FALSE of len bytes, continuing from crc (start with 0xFFFF). */
uint16_t mc_rpc_crc16(uint16_t crc, const uint8_t* data, size_t len);

/* Send one frame carrying payload through mc_platform_write(). */
mc_status_t mc_rpc_send_frame(const uint8_t* payload, size_t payload_len);

/* What feeding one byte to the decoder produced. */
typedef enum {
  MC_RPC_DECODE_NOTHING = 0,  /* no frame ended (or an empty frame: two flags) */
  MC_RPC_DECODE_FRAME = 1,    /* a valid frame: its payload is in the buffer */
  MC_RPC_DECODE_DAMAGED = 2   /* a frame ended that fails the length, CRC or escaping checks */
} mc_rpc_decode_result_t;

/* A streaming frame decoder over a caller-provided buffer. */
typedef struct {
  uint8_t* buffer;    /* holds length | payload | crc of the frame being received */
  size_t capacity;    /* max payload + MC_RPC_FRAME_OVERHEAD */
  size_t fill;        /* bytes received into buffer */
  uint8_t escaped;    /* the previous byte was MC_RPC_ESCAPE */
  uint8_t damaged;    /* the frame is already known bad (overflow, bad escape) */
} mc_rpc_decoder_t;

void mc_rpc_decoder_init(mc_rpc_decoder_t* decoder, uint8_t* buffer, size_t capacity);

/* Feed one received byte. On MC_RPC_DECODE_FRAME, *payload and *payload_len
 * describe the payload inside the decoder's buffer; they stay valid until the
 * next call. */
mc_rpc_decode_result_t mc_rpc_decoder_feed(mc_rpc_decoder_t* decoder, uint8_t byte,
                                           const uint8_t** payload, size_t* payload_len);

#ifdef __cplusplus
}
#endif

#endif /* MICROCOMPILER_RPC_FRAMING_H_ */
