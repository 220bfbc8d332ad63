/**
 * Names common in the UAE with their Arabic forms, so a generated patient's
 * English and Arabic names are the same person (faker's locales draw each
 * script from unrelated lists).
 */
export interface BilingualName {
  en: string;
  ar: string;
}

const n = (en: string, ar: string): BilingualName => ({ en, ar });

export const MALE_GIVEN: readonly BilingualName[] = [
  n("Mohammed", "محمد"),
  n("Ahmed", "أحمد"),
  n("Khalid", "خالد"),
  n("Saeed", "سعيد"),
  n("Omar", "عمر"),
  n("Hamdan", "حمدان"),
  n("Rashid", "راشد"),
  n("Sultan", "سلطان"),
  n("Abdullah", "عبدالله"),
  n("Yousef", "يوسف"),
  n("Hassan", "حسن"),
  n("Majid", "ماجد"),
];

export const FEMALE_GIVEN: readonly BilingualName[] = [
  n("Fatima", "فاطمة"),
  n("Mariam", "مريم"),
  n("Aisha", "عائشة"),
  n("Noura", "نورة"),
  n("Latifa", "لطيفة"),
  n("Hessa", "حصة"),
  n("Shamma", "شما"),
  n("Maitha", "ميثاء"),
  n("Amna", "آمنة"),
  n("Salama", "سلامة"),
  n("Reem", "ريم"),
  n("Moza", "موزة"),
];

export const FAMILY: readonly BilingualName[] = [
  n("Al Mansoori", "المنصوري"),
  n("Al Nuaimi", "النعيمي"),
  n("Al Dhaheri", "الظاهري"),
  n("Al Ketbi", "الكتبي"),
  n("Al Shamsi", "الشامسي"),
  n("Al Mazrouei", "المزروعي"),
  n("Al Hammadi", "الحمادي"),
  n("Al Suwaidi", "السويدي"),
  n("Al Falasi", "الفلاسي"),
  n("Al Marri", "المري"),
];

export const EMIRATES: readonly BilingualName[] = [
  n("Abu Dhabi", "أبوظبي"),
  n("Dubai", "دبي"),
  n("Sharjah", "الشارقة"),
  n("Ajman", "عجمان"),
  n("Umm Al Quwain", "أم القيوين"),
  n("Ras Al Khaimah", "رأس الخيمة"),
  n("Fujairah", "الفجيرة"),
];
