import { describe, expect, it } from "vitest";
import { addressList, corsOriginList, emailAddress, listIdParam, listIdsParam, outboundUrl } from "../../src/domain/fields";

const messageOf = (result: { success: boolean; error?: { issues: Array<{ message: string }> } }) => result.error?.issues[0]?.message;

describe("list ids", () => {
  it("takes a positive integer below 2^53 as a number or text: shard k's ids start at k * 2^40", () => {
    expect(listIdParam.parse(12)).toBe(12);
    expect(listIdParam.parse(" 12 ")).toBe(12);
    expect(listIdParam.parse("2147483648")).toBe(2147483648);
    expect(listIdParam.parse(2 ** 40 + 1)).toBe(2 ** 40 + 1);
    expect(listIdParam.parse(String(2 ** 53 - 1))).toBe(2 ** 53 - 1);
    expect(listIdsParam.parse(`${2 ** 40 + 1},${2 ** 41 + 2}`)).toEqual([2 ** 40 + 1, 2 ** 41 + 2]);
  });

  it.each([0, -1, String(2 ** 53), "99999999999999999", 2 ** 53, "1e3", "12.5", "abc", true])("refuses %j", (value) => {
    expect(listIdParam.safeParse(value).success).toBe(false);
  });

  it("reads a comma-separated list, each id once", () => {
    expect(listIdsParam.parse("4, 7,4")).toEqual([4, 7]);
    expect(messageOf(listIdsParam.safeParse("4,x"))).toMatch(/"x" is not one/);
  });

  it("takes several as a JSON array, or its text", () => {
    expect(listIdsParam.parse([4, "7", 4])).toEqual([4, 7]);
    expect(listIdsParam.parse(" [4, 7] ")).toEqual([4, 7]);
    expect(listIdsParam.parse(9)).toEqual([9]);
    expect(messageOf(listIdsParam.safeParse("[4, 7"))).toMatch(/a JSON array of them/);
    expect(messageOf(listIdsParam.safeParse([4, 0]))).toMatch(/"0" is not one/);
    expect(messageOf(listIdsParam.safeParse("[]"))).toBe("must name at least one list");
    expect(listIdsParam.safeParse([[4]]).success).toBe(false);
  });
});

describe("email fields", () => {
  it("normalise one address and name a bad one", () => {
    expect(emailAddress.parse(" Ada@Example.com ")).toBe("ada@example.com");
    expect(messageOf(emailAddress.safeParse("shop"))).toBe('must be an email address, not "shop"');
    expect(emailAddress.safeParse(42).success).toBe(false);
  });

  it("read an address list with its limit", () => {
    expect(addressList(2).parse("a@x.com; B@x.com")).toEqual(["a@x.com", "b@x.com"]);
    expect(messageOf(addressList(2).safeParse("a@x.com,b@x.com,c@x.com"))).toMatch(/at most 2/);
  });
});

describe("outbound URLs", () => {
  const strict = outboundUrl({ allowPrivateFetch: false });
  const local = outboundUrl({ allowPrivateFetch: true });

  it("answer the URL in its normal form", () => {
    expect(strict.parse(" https://Files.Example.com/a b.csv ")).toBe("https://files.example.com/a%20b.csv");
  });

  it("refuse other schemes, credentials and, unless allowed, private hosts", () => {
    expect(messageOf(strict.safeParse("ftp://example.com/a.csv"))).toBe("must use http or https, not ftp");
    expect(messageOf(strict.safeParse("https://u:p@example.com/a.csv"))).toMatch(/credentials/);
    expect(messageOf(strict.safeParse("http://169.254.169.254/latest"))).toMatch(/private/);
    expect(local.parse("http://127.0.0.1:8787/a.csv")).toBe("http://127.0.0.1:8787/a.csv");
  });
});

describe("CORS origins", () => {
  it("keeps origins in their standard form, and *", () => {
    expect(corsOriginList.parse(["https://Shop.Example.com", "http://127.0.0.1:3000/", "*", "https://shop.example.com", "chrome-extension://abcdefghijklmnop"])).toEqual([
      "https://shop.example.com",
      "http://127.0.0.1:3000",
      "*",
      "chrome-extension://abcdefghijklmnop",
    ]);
  });

  it.each(["shop.example.com", "https://shop.example.com/cart", "ftp://shop.example.com", "https://shop.example.com?x=1", "", "chrome-extension://abc/popup.html"])("refuses %j", (origin) => {
    expect(messageOf(corsOriginList.safeParse([origin]))).toMatch(/must be an origin such as https:\/\/shop.example.com/);
  });
});
