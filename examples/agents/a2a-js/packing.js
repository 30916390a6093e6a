// The agent's own logic, free of any protocol: a packing list for a city and a number of nights.

const CLIMATE = {
  北京: "dry", Beijing: "dry", 西安: "dry", "Xi'an": "dry",
  广州: "humid", Guangzhou: "humid", 深圳: "humid", Shenzhen: "humid",
  三亚: "hot", Sanya: "hot", 厦门: "humid", Xiamen: "humid",
  上海: "rainy", Shanghai: "rainy", 杭州: "rainy", Hangzhou: "rainy",
};

const EXTRA = {
  dry: ["lip balm", "moisturiser"],
  humid: ["light shirts", "insect repellent"],
  hot: ["sunscreen", "swimwear", "sunglasses"],
  rainy: ["umbrella", "waterproof shoes"],
};

/** Items to pack; clothes scale with the number of nights. */
export function packingList(city, nights) {
  return [
    "passport or ID card",
    "phone charger",
    `${nights + 1} sets of underwear and socks`,
    `${Math.max(1, Math.floor((nights + 1) / 2))} shirts`,
    "toothbrush and toothpaste",
    ...(EXTRA[CLIMATE[city] ?? ""] ?? []),
  ];
}

/** True when the request was written in Chinese (reply in the user's language). */
export function isChinese(text) {
  return /[\u4e00-\u9fff]/.test(text);
}

/** The text the user reads. */
export function replyText(city, nights, items, chinese) {
  return chinese
    ? `去${city}住 ${nights} 晚，建议带：${items.join("、")}。`
    : `For ${nights} night(s) in ${city}, pack: ${items.join(", ")}.`;
}
