import type { SmsLength } from "../../../../src/domain/answers";

/** How carriers will count a message: its encoding, characters and segments. */
export function SmsLengthNote({ length }: { length: SmsLength }) {
  return (
    <span>
      {length.encoding}, {length.characters} character{length.characters === 1 ? "" : "s"}, {length.segments} segment{length.segments === 1 ? "" : "s"}
    </span>
  );
}
